// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How this machine moves: the evidence a kept cost rests on, and the drift
// of t(b) it shows.
//
// Evidence. Each live run that refines a kept cost (a calibration, a bench,
// a tune's confirmation, the window's runs) leaves an entry: when, with how
// many lanes, each size's median t(b) and the batches behind it, and how
// far that stood from the curve it refined (its level: the batch-weighted
// geometric mean of median over the curve's t(b)). A run on a busy machine
// (other processes using CPU, or a level far outside the drift) is kept
// too, labelled with why, and refines nothing. The file keeps the latest
// kMaxEvidence entries.
//
// Drift. Each unlabelled entry's level against the curve as it stands now
// (the curve for its lanes), over every such entry: its p10, median and
// p90, how many runs and over what time. A cost needs kMinDriftRuns entries
// over kMinDriftSpanS or more before its drift is known (runs made within a
// few minutes of each other, as a new cost's calibrations are, say nothing
// of how the machine moves over an afternoon); until then a prediction's
// band stands in at +-kDefaultBand, and says so.
//
// Busy runs. A run refines a kept cost only where the machine was quiet:
// other processes used under busy_cores() of CPU over it (from /proc,
// machine_load.h), and its level, over the sizes the kept curve measured
// live (a size only scaled from a profile is the run's to correct), stands
// within kFarFactor of the drift's range (of 1, before the drift is known). Such a run is kept as
// evidence with why, and refines nothing. A run that does refine moves the cost only as far as the
// evidence supports: its level held within kMoveFactor of the drift's range, the run's t(b) scaled
// to that (one run on a machine that slowed 1.7x moves the cost 1.25x; the next runs, the rest).
//
// Band factors. A prediction's band is the prediction made again with t(b)
// scaled by the drift's low and high quantile (CostModel::scaled), each
// held on its side of 1 so that the band holds the nominal prediction.
// Thread-safety: plain values and pure functions.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runs/machine_load.h"

namespace batchscope {

class CostModel;

struct EvidencePoint {
  uint32_t batch = 1;
  double median_us = 0;
  uint64_t batches = 0;
};

struct CostEvidence {
  std::string at;  // UTC, ISO 8601 ("2026-12-03T22:35:34.123Z"); empty: not known
  uint32_t lanes = 1;
  std::vector<EvidencePoint> points;  // by batch, rising
  double level = 0;                   // against the curve it refined; 0: none compared
  std::string busy;                   // why it refined nothing; empty: it refined
};

inline constexpr size_t kMaxEvidence = 64;
inline constexpr size_t kMinDriftRuns = 3;
inline constexpr double kMinDriftSpanS = 600;
inline constexpr double kDefaultBand = 0.15;
inline constexpr double kFarFactor = 2.0;
inline constexpr double kMoveFactor = 1.25;
inline constexpr double kBusyCores = 0.25;

struct CostDrift {
  size_t runs = 0;  // entries it rests on
  double p10 = 1, p50 = 1, p90 = 1;
  std::string oldest, newest;  // the entries' times
  double span_s = 0;           // from the oldest to the newest

  bool known() const { return runs >= kMinDriftRuns && span_s >= kMinDriftSpanS; }
  // Why it is not known yet: "the kept cost has 2 live runs over 3 minutes; a
  // drift needs 3 over 10 minutes or more".
  std::string unknown_why() const;
  // "t(b) moved 0.93..1.12x (p10..p90) over 5 runs from 2026-12-01 to 2026-12-03".
  std::string describe() const;
};

// The batch-weighted geometric mean over `points` of median_us over
// cost.cost_us(b, lanes, lanes); 0 when no size compares.
double evidence_level(const std::vector<EvidencePoint>& points, const CostModel& cost,
                      uint32_t lanes);

// `observed` (t(b) as a live run with `lanes` lanes ran it) as evidence
// against `kept`: its sizes' medians and level, dated `when`.
CostEvidence evidence_of(const CostModel& observed, const CostModel& kept, uint32_t lanes,
                         const std::string& when);

// The competing CPU, in cores, above which a run is busy: kBusyCores, or
// $BATCHSCOPE_BUSY_CORES where it is a number from 0.
double busy_cores();
// True where $BATCHSCOPE_REFINE_ALWAYS is 1: every run refines as it is,
// however busy the machine or far the run (a machine that runs its own
// tests beside each other, where the tests are of refinement itself).
bool refine_always();

// What a live run may do to a kept cost (the rules above).
struct RunVerdict {
  double level = 0;  // the run's t(b) over the kept curve's; 0: none compared
  double scale = 1;  // the run's t(b) is scaled by this before it refines
  std::string busy;  // why it refines nothing; empty: it refines
  std::string held;  // why its move was held (scale != 1); empty: it was not
};
// The same rules for a run whose `level` against its kept cost is known
// (0: none compared), `first` when no live run has refined that cost yet.
// `what` names what ran ("t(b)", "its steps").
RunVerdict judge_level(double level, const CostDrift& drift, bool first,
                       const CompetingLoad* others, double busy_at = kBusyCores,
                       const char* what = "t(b)");
// `others`: what other processes used over the run; null: not watched.
RunVerdict judge_run(const CostModel& kept, const CostModel& observed, uint32_t lanes,
                     const CompetingLoad* others, double busy_at = kBusyCores);

// The drift of `cost`'s own evidence against its curves as they stand.
CostDrift drift_of(const CostModel& cost);
// The drift of evidence whose levels stand as recorded (a step cost's:
// each run's steps against the fit it refined).
CostDrift drift_of_levels(const std::vector<CostEvidence>& evidence);

// Seconds since the epoch of a UTC time as utc_now_ms() writes it; 0 when
// it is not one.
double utc_seconds(const std::string& at);

// The value at quantile q of `values` (sorted ascending), interpolated.
double quantile_sorted(const std::vector<double>& values, double q);

// The factors a band scales t(b) by: the drift's p10 and p90 where it is
// known and `margin` is 0; else 1 - margin and 1 + margin (margin 0:
// kDefaultBand). Low at most 1, high at least 1.
struct BandFactors {
  double low = 1, high = 1;
  std::string source;  // "the drift over 5 runs", "--headroom 0.2", "the default +-15% ..."
};
BandFactors band_factors(const CostDrift& drift, double margin = 0);

// {"at": ..., "lanes": N, "level": x, "busy": "...", "points": [{"batch",
// "median_us", "batches"}]}, comma-separated, for the cost file's
// "evidence" array.
std::string evidence_json(const std::vector<CostEvidence>& evidence);
// Reads what evidence_json() writes (the array's text): counts and times
// checked, each error naming the entry and field and quoting the value.
Expected<std::vector<CostEvidence>> evidence_from_json(std::string_view array_text,
                                                       const std::string& prefix);

}  // namespace batchscope
