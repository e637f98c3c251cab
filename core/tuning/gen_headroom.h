// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Winners that hold, for a generative model (as tune_headroom.h for a
// tensor one): each configuration shown gets a band, its TTFT, ITL,
// tokens/s and goodput predicted again with the step cost scaled by the
// band's factors (the kept step cost's drift, cost_drift.h, or +-15%, or
// --headroom), and its headroom: the largest slowdown of the step cost and
// rise of the arrival rate at which it still meets the objective, each by
// bisection (bisect_headroom). Among rates that tie (within 1%) room
// decides (roomiest_tie). The choice is the best, in the objective's
// order, that still meets it with the step cost `needed` times as slow;
// where none of those shown does, the one with the most slowdown headroom,
// marked fragile.
// Thread-safety: pure functions; the evaluator runs on the caller's thread.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tuning/gen_tune.h"
#include "tuning/tune_headroom.h"

namespace batchscope {

// A configuration predicted with the step cost `slow` times as slow and
// the arrival rate `rate` times as high.
using GenScaledEvaluator = std::function<GenEvaluated(const Options&, double slow, double rate)>;

GenBand gen_band_of(const GenEvaluated& nominal, const GenScaledEvaluator& predict,
                    const BandFactors& factors);
Headroom gen_headroom_of(const Options& options, const GenScaledEvaluator& predict,
                         const GenSlo& slo, bool rate_applies);

struct GenHeadroomResult {
  double needed = 1;
  std::string source;
  BandFactors band;
  std::vector<GenEvaluated> checked;  // the best in the objective's order, with band and headroom
  std::optional<size_t> holds, closest;
  const GenEvaluated* chosen() const;
  bool fragile() const { return !holds.has_value(); }
};

// As rank_by_headroom() (tune_headroom.h), for `result`'s configurations
// that meet its objective, walked by choose_gen_best().
GenHeadroomResult gen_rank_by_headroom(const GenTuneResult& result,
                                       const GenScaledEvaluator& predict,
                                       const HeadroomSettings& settings);

// The band of each of `front`'s first `at_most` points, and the headroom of
// those `h` checked: a checked point's own, else gen_band_of() at `h`'s
// factors; stops early when `cancel` says so.
void band_gen_front(std::vector<GenEvaluated>& front, const GenHeadroomResult& h,
                    const GenScaledEvaluator& predict, size_t at_most = 64,
                    const std::function<bool()>& cancel = {});

// {"needed_slowdown", "source", "band": {"fast", "slow", "source"},
// "fragile", "chosen": {options}|null, "checked": [{"options", "ttft_ms",
// "itl_ms", "tokens_per_s", "goodput_rps", "band": {"fast", "slow",
// "ttft_ms": [lo, hi], "itl_ms", "tokens_per_s", "goodput_rps"},
// "headroom": {...}}]}: the "headroom" member of a generative tune's JSON.
std::string gen_headroom_json(const GenHeadroomResult& h);

// The candidates as a table, the chosen marked '*', each short of the
// headroom "fragile", then what was chosen and why.
std::string gen_headroom_table(const GenHeadroomResult& h, const GenSlo& slo);

}  // namespace batchscope
