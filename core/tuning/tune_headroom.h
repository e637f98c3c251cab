// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Winners that hold on the machine you will have. A configuration picked at
// the kept cost's nominal t(b) runs near its knee by construction, and the
// machine moves (cost_drift.h): a few percent of t(b) there moves the p99
// tenfold. So every prediction the tuner shows gets
//  - a band: the same prediction on t(b) scaled by the band's factors
//    (band_factors(): the kept drift's p10 and p90, or a margin), the
//    adaptive strategy still planning on the kept cost as a live engine
//    would;
//  - headroom: the largest slowdown of t(b), and the largest rise of the
//    arrival rate, at which it still meets the objective, each found by
//    bisection on the predictor between 1 and kMaxHeadroom to within
//    kHeadroomStep;
// and the tune's choice is the best configuration, in the objective's
// order, that still meets the objective with t(b) `needed` times as slow
// (rank_by_headroom); where the objective ties several of those that do
// (throughputs within 1%), the one with the most room (roomiest_tie). Where
// none does, the closest (the most slowdown headroom among those shown) is
// chosen and marked fragile.
// A rate rise scales every rate of the pattern (a trace's replay speed);
// a closed loop's rate is its own, so it has none.
// Thread-safety: pure functions; the evaluator runs on the caller's thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "traffic/arrivals.h"
#include "tuning/cost_drift.h"
#include "tuning/cost_model.h"
#include "tuning/tune_run.h"
#include "tuning/tuner.h"

namespace batchscope {

inline constexpr double kMaxHeadroom = 4;
inline constexpr double kHeadroomStep = 0.01;  // relative

// A configuration predicted with t(b) `slow` times as slow and the arrival
// rate `rate` times as high.
using ScaledEvaluator = std::function<Evaluated(const Options&, double slow, double rate)>;

// The largest factor in [1, kMaxHeadroom] at which `meets` holds, to
// within kHeadroomStep (bisection on its logarithm); 0 when it does not
// hold at 1, kMaxHeadroom with `beyond` set when it holds there.
double bisect_headroom(const std::function<bool(double)>& meets, bool& beyond);

// The predictor as a ScaledEvaluator (as prediction_evaluator(), tune_run.h).
ScaledEvaluator scaled_prediction_evaluator(const ArrivalSpec& traffic, const CostModel& cost,
                                            uint64_t* simulated = nullptr,
                                            bool plan_on_cost = false,
                                            std::vector<uint32_t> lengths = {});

// False for a closed loop: its rate follows its answers. A rate rise is
// scaled_traffic() (gen_tune.h).
bool rate_scales(const ArrivalSpec& spec);

// `nominal`'s band: its options predicted at factors.low and .high.
PredictionBand band_of(const Evaluated& nominal, const ScaledEvaluator& predict,
                       const BandFactors& factors);

// The headroom of `options` under the objective (meets_slo()).
Headroom headroom_of(const Options& options, const ScaledEvaluator& predict, double slo_p99_ms,
                     double loss_tolerance, bool rate_applies);

struct HeadroomSettings {
  double needed = 1 + kDefaultBand;  // the slowdown of t(b) a winner must withstand
  std::string source;                // where `needed` came from, for the output
  BandFactors band;                  // the band every configuration shown gets
  size_t shown = 10;                 // the best this many get band and headroom
  size_t max_checks = 500;           // candidates tried at `needed` at most
  bool rate_applies = true;          // rate_scales() of the traffic
  std::function<bool()> cancel;      // polled before each prediction
};

struct HeadroomResult {
  double needed = 1;
  std::string source;
  BandFactors band;
  // The best candidates in the objective's order (and the one that holds,
  // where it came later), each with its band and headroom.
  std::vector<Evaluated> checked;
  std::optional<size_t> holds;    // into `checked`: the best that meets it at `needed`
  std::optional<size_t> closest;  // when none does: the most slowdown headroom
  uint64_t predictions = 0;
  bool cancelled = false;
  // The choice: `holds`, else `closest`; fragile when it is `closest`.
  const Evaluated* chosen() const;
  bool fragile() const { return !holds.has_value(); }
};

// The configurations of `result` that meet its SLO, walked in the
// objective's order (choose_best() again and again), each tried at
// settings.needed until one meets it; band and headroom for the first
// settings.shown and that one. Empty `checked` when none meets the SLO.
HeadroomResult rank_by_headroom(const TuneResult& result, const ScaledEvaluator& predict,
                                const HeadroomSettings& settings);

// What `tune` and the Tuner panel both do after a search: the settings from
// `cost`'s drift (or `margin`, --headroom) and the traffic, the best
// ranked by headroom (rank_by_headroom), the first `banded` distinct points
// of the front given a band, and result.best made the choice. Nothing but
// the settings when no configuration meets the SLO.
HeadroomSettings headroom_settings(const CostModel& cost, const ArrivalSpec& traffic,
                                   double margin = 0);
HeadroomResult apply_headroom(TuneResult& result, const ScaledEvaluator& predict,
                              const HeadroomSettings& settings, size_t banded = 64);

// Among those that tie on the objective, room decides: of `checked` from
// `holds` on, those that hold (slowdown headroom at least `needed`) and tie
// with the first that does (`ties`: their rate within the objective's band
// of the best), the one with the most slowdown headroom; an earlier one
// keeps its place unless a later one has 5% more. Under open-loop traffic
// every configuration that keeps up serves the offered rate, and the p99
// that orders them within the band matters less than how far each is from
// its knee.
template <typename E, typename Ties>
size_t roomiest_tie(const std::vector<E>& checked, size_t holds, double needed, Ties ties) {
  size_t best = holds;
  for (size_t i = holds + 1; i < checked.size(); ++i) {
    const auto& h = checked[i].headroom;
    if (!h || h->slowdown < needed || !ties(checked[i])) continue;
    if (h->slowdown > 1.05 * checked[best].headroom->slowdown) best = i;
  }
  return best;
}

// What is confirmed live, at most `k`: the chosen first, then the others
// that hold, then the rest, each in the objective's order. For a tensor
// tune's HeadroomResult and a generative one's (gen_headroom.h).
template <typename Result>
auto confirm_order_of(const Result& h, size_t k) {
  using E = std::decay_t<decltype(h.checked.front())>;
  std::vector<E> out;
  const E* chosen = h.chosen();
  if (chosen) out.push_back(*chosen);
  auto holds = [&](const E& e) { return e.headroom && e.headroom->slowdown >= h.needed; };
  for (int pass = 0; pass < 2; ++pass) {
    for (const E& e : h.checked) {
      if (&e != chosen && holds(e) == (pass == 0)) out.push_back(e);
    }
  }
  if (out.size() > k) out.resize(k);
  return out;
}
inline std::vector<Evaluated> confirm_order(const HeadroomResult& h, size_t k) {
  return confirm_order_of(h, k);
}

// The winner among the confirmed as measured (best_measured(), by the
// median of its runs): of those predicted to hold `needed`, where one meets
// the objective live; else of all. A winner that missed live is so
// replaced by the next confirmed one with headroom.
Expected<size_t> best_holding(std::span<const Confirmed> confirmed, double needed,
                              double slo_p99_ms, TuneObjective objective);

// "holds to 1.42x t(b) and +38% rate" ("4x or more", "no rate headroom: a
// closed loop").
std::string headroom_text(const Headroom& h, const char* cost = "t(b)");

// {"needed_slowdown": x, "source": "...", "band": {"fast": x, "slow": x,
// "source": "..."}, "fragile": bool, "chosen": {...}|null, "checked":
// [{"options": {...}, figures, "band": {...}, "headroom": {...}}]}: the
// "headroom" member of a tune's JSON.
std::string headroom_json(const HeadroomResult& h);
// Its members up to "checked" (the generative one's too, gen_headroom.h):
// `{"needed_slowdown": ..., ..., "chosen": ...,` with the brace open.
std::string headroom_json_head(double needed, const std::string& source, const BandFactors& band,
                               bool fragile, const Options* chosen);
// {"fast", "slow", "throughput_rps": [lo, hi], "p50_ms": [...], "p99_ms":
// [...], "loss_rate": [...]} and {"slowdown", "rate", "rate_applies",
// "slowdown_beyond", "rate_beyond"}, as tune_json() writes them too.
std::string band_json(const PredictionBand& b);
std::string headroom_figures_json(const Headroom& h);

}  // namespace batchscope
