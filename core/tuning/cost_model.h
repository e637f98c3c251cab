// SPDX-License-Identifier: GPL-3.0-or-later
// A model's batch cost t(b): how long one batch of b requests runs, built from
// measured points (batch size, median run time, jitter). The predictor
// (predictor.h) replays traffic against it instead of running a model.
//
// Shape. Between two points t(b) is interpolated linearly. Beyond the last
// point it is extrapolated linearly along the last two, and below the first
// along the first two; a model of a single point is proportional, t(b) = t1 *
// b / b1. It never goes below 0.
//
// Jitter. A point's run-to-run jitter is its run times over its median as
// quantiles (p0 .. p100, from a profile or a live run), or, where none were
// kept, a uniform spread of +-spread. jitter_factor(b, u) interpolates the
// two points' factors at quantile u between points and holds the nearest
// end's outside them; the predictor draws u uniformly.
//
// Streaks. Live, slow batches come in runs (the machine's other threads):
// the log of a batch's run time over its size's median correlates with the
// next batches'. A live run measures it as weight w and rate rho, the
// correlation at lag k being w * rho^k (fitted at lags 1 and 10), and the
// predictor draws each batch's quantile from a Gaussian that much correlated
// with the last (none when not measured: independent draws).
//
// Format. The JSON carries "format": "batchscope-cost" and "version": 3.
// A file without a version is read as version 1 (written before versions,
// the same fields less the quantiles), version 2 as 3 less each point's
// weight and date; a newer version is refused, naming it.
//
// Weights (version 3). A point measured live keeps how many batches its
// median rests on and when it was last measured. A refinement (calibrated())
// averages a size it sees again by batches, the old weight capped at
// kMaxPointWeight so that the curve keeps following the machine; a size
// never measured live (a profile's, or one scaled from its neighbours) takes
// what the run saw outright.
//
// Measured overhead (optional). A live run (`bench --cost-out`, from_run) also
// gives each answered request's time outside its batch, kept as 65 quantiles
// (p0, p1/64, ..., p100): its answer's way back after the batch ended, which
// the predictor adds to each request's completion (version 3: by the batch's
// size, in powers of two, as a lane answers a batch's requests one after
// another: on the synthetic model a batch of 2 or 3 answered in a median 3
// us, one of 64 to 127 in 51 us), and (version 3) its send
// lag, how late the load driver sent it, which the predictor replays as the
// driver's stalls (send_lag.h: how often they start with so many lanes
// running, how long they last). A file from before version 3 keeps the two
// as one overhead added at completion.
//
// Lanes at once (optional). `profile --lanes N` measures t(b) again while 2..N
// copies of the model run batches at once: lanes sharing one GPU or the CPU's
// cores. cost_us(b, busy) prices a batch by the lanes busy when it starts.
// A live run with N lanes also measures, apart, the batches that started
// with fewer of its lanes running (`alone`): they run on one lane's share of
// the threads (on a CPU the BLAS threads are split among the lanes), so
// they are slower than a one-lane engine's batches and faster than those
// that share the machine with the other lanes. cost_us(b, busy, lanes)
// prices a batch of an N-lane engine with them.
//
// Lengths (optional). For a model whose inputs vary in length, t(b) is
// measured at one reference length and a LengthGrid (length_grid.h) scales
// it: a batch padded to L costs t(b) + length_extra_us(b, L).
//
// Evidence (optional): the live runs that refined it, each size's median
// with when and at how many lanes, from which the drift of t(b) on this
// machine is worked out (cost_drift.h).
//
// Preprocess (optional): a Python class's per request, in its pool and in a
// lane (preprocess_cost.h), which the predictor replays ahead of the batcher.
//
// Sources: points given directly, the synthetic runner's SyntheticCost, or the
// JSON that `batchscope profile --json` writes (core/torch/profile.h), which
// is read with nlohmann/json (header-only, installed by scripts/setup).
//
// Its points, lanes and overhead are cost_points.h's.
// Thread-safety: a plain value; const methods may be called from any thread.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/options.h"
#include "common/status.h"
#include "runs/records.h"
#include "runs/run_record.h"
#include "tuning/cost_drift.h"
#include "tuning/cost_points.h"
#include "tuning/length_grid.h"
#include "tuning/preprocess_cost.h"
#include "tuning/send_lag.h"

namespace batchscope {

struct SyntheticCost;

class CostModel {
 public:
  // No cost at all: t(b) = 0 for every b.
  CostModel();

  // Checks the points: at least one; batch >= 1 and strictly increasing;
  // median_us finite and >= 0; spread in [0, 1). The error names the point
  // and field and quotes the value: "points[2].batch = 4 must be above ...".
  static Expected<CostModel> from_points(std::vector<CostPoint> points);

  // The synthetic runner's a + c*b + l*ln(b + 1), exact for b up to
  // `max_batch`: two points when l = 0 (the line extrapolates exactly), a
  // point per batch size otherwise. Its jitter becomes the spread, clamped
  // into [0, 1).
  static CostModel from_synthetic(const SyntheticCost& cost, uint32_t max_batch = kMaxBatchSize);

  // Reads {"points": [{"batch": 1, "median_us": 520.5, "spread": 0.05}, ...]},
  // and optionally "overhead_us_quantiles" (an array as with_overhead()
  // takes) and "lanes": [{"lanes": 2, "points": [...]}, ...] (as with_lanes()
  // takes); "spread" is optional (default 0) and every other key is ignored. Errors
  // say what is wrong where: "profile JSON: points[1].median_us = -3 must be
  // finite and >= 0", "profile JSON: \"points\" is missing", ...
  static Expected<CostModel> from_profile_json(std::string_view json);
  // from_profile_json() of a file's text. Errors name the file: "cannot read
  // PATH", "PATH is 90000000 bytes; a cost file holds at most 16777216",
  // "PATH: profile JSON: ...". The size is checked before anything is read.
  static Expected<CostModel> from_file(const std::string& path);
  static constexpr uint64_t kMaxFileBytes = 16u << 20;

  // t(b) as the engine ran it: the run time (run_end - run_start) of every
  // batch that ran and did not fail, the median, spread and quantiles of each
  // size seen at least `min_runs` times, the medians made monotone in b
  // (monotone_fit, weighted by each size's runs), the slow state divided
  // out where it streaks (JitterStreak), and the lanes' turnaround from the
  // gaps before batches whose oldest request's `max_wait` (the run's) had
  // run out when the batch before on that lane ended. Errors when no size
  // ran min_runs times.
  static Expected<CostModel> from_batches(std::span<const BatchRecord> batches, size_t min_runs = 5,
                                          uint32_t busy = 1, Duration max_wait = Duration::zero());

  // from_batches(run.batches, ..., its max_wait), with the distribution of each answered
  // request's time outside its batch ((sent - intended) + (done - its
  // batch's run_end)) when the run recorded its batches. With `busy` above
  // 1, only the batches that started while at least that many lanes were
  // running (itself included) count: t(b) as the predictor prices a batch
  // with that many busy (a two-lane run's batches that ran alone are left
  // out of its two-lane curve).
  // A run whose batches vary in length is read at `lengths`' reference
  // length (at_reference_length(), its turnaround from the run as it ran);
  // without a grid, such a run is refused: its t(b) would mix lengths.
  // Where its lanes prepared their batches (BatchRecord::model_start), t(b)
  // is read from the model's start, and the preparing goes to the
  // preprocess cost, with the pool's (PreprocessCost::from_run).
  static Expected<CostModel> from_run(const RunData& run, size_t min_runs = 5, uint32_t busy = 1,
                                      const LengthGrid& lengths = {});
  // This model with a measured overhead: empty (none) or 2 to kMaxQuantiles
  // quantiles in microseconds, non-decreasing, each in [0, kMaxCostUs].
  // Errors name the index and quote the value.
  Expected<CostModel> with_overhead(std::vector<double> overhead_us) const;
  // This model with the overhead measured by the size of the batch
  // answered: entry k for sizes 2^k .. 2^(k+1) - 1, each empty (not
  // measured) or quantiles as with_overhead() takes; at most kMaxSizeBands.
  Expected<CostModel> with_overhead_by_size(std::vector<std::vector<double>> bands) const;
  // This model with the capacity `lanes` lanes were measured to serve with
  // every batch full (0 .. 1e9 req/s; the lanes' entry must exist for more
  // than one); capacity() is never above it.
  CostModel with_capacity(uint32_t lanes, double rps) const;
  // That measured capacity; 0 when none was.
  double measured_capacity(uint32_t lanes) const;
  // This model with a measured send lag (send_lag.h): its quantiles checked
  // as with_overhead()'s, rates finite in [0, 1e9].
  Expected<CostModel> with_send_lag(SendLagModel lag) const;
  // This model with t(b) measured at several lanes at once: each entry's
  // points checked as from_points() does, lanes 2..kMaxCostLanes and strictly
  // increasing. Errors name the entry: "lanes[1].lanes = 2 must be above 2".
  Expected<CostModel> with_lanes(std::vector<LaneCostPoints> lanes) const;
  // This model refined by `observed`, t(b) as a live run with `lanes` lanes
  // ran it (from_run): the curve for that many lanes (t(b) itself for 1; the
  // lanes entry for more, made from the nearest fewer lanes' curve when the
  // model has none) takes each observed size's median, spread and quantiles,
  // averaged by batches with what the curve had where that size was
  // measured live before (its weight capped at kMaxPointWeight); every size
  // never measured live is scaled by the observed-to-modelled ratio,
  // interpolated between the observed sizes and held beyond them, and a
  // size measured live before that this run did not see stays as it was.
  // An observed run whose lanes prepared their own requests without saying
  // when the model began (from_run of preprocess_workers 0, records of an
  // older engine) refines nothing of a model that measured preprocess: its
  // t(b) holds the preparing. A model that measured preprocess has it
  // refined by the run's (PreprocessCost::refined). The observed overhead, streak
  // and turnaround, when measured, are averaged the same way (by the batches behind the curve and
  // the run's), or taken outright when the curve had none. `when`, if given, becomes the observed
  // sizes' measured_at. What refines a kept cost keeps the run as evidence
  // too (with_evidence(evidence_of(...))).
  CostModel calibrated(const CostModel& observed, uint32_t lanes = 1,
                       const std::string& when = {}) const;
  // The evidence this model rests on, oldest first (cost_drift.h).
  const std::vector<CostEvidence>& evidence() const { return evidence_; }
  // This model with `e` kept as evidence, the oldest dropped beyond
  // kMaxEvidence (a run kept but labelled busy refines nothing else).
  CostModel with_evidence(CostEvidence e) const;
  // This model on a machine `factor` times as slow (factor > 0): every
  // t(b) curve, the lengths' extra and the preprocess scaled by it, the
  // measured capacities divided by it; the answers' overhead, send lag and
  // turnaround kept. A prediction's band and headroom are made on it.
  CostModel scaled(double factor) const;
  // The live batches behind the curve for `lanes` (capped per point at
  // kMaxPointWeight), as calibrated() weighs it; 0 when none was live.
  uint64_t live_batches(uint32_t lanes) const;
  // This model with every point's jitter uniform over +-spread: its run-time
  // quantiles dropped (to compare the two shapes side by side).
  CostModel uniform_jitter() const;
  // This model with every batch's jitter drawn independently: its streaks
  // dropped (to compare side by side).
  CostModel independent_jitter() const;
  // {"points": [{"batch", "median_us", "spread"}], and "overhead_us_quantiles"
  // and "lanes" when measured}, which from_profile_json() reads back.
  // `extra`, when given, is members inserted after "version" (a cache
  // file's provenance): `"made_for": {...}`, without braces around them.
  std::string to_json(const std::string& extra = {}) const;

  // t(b) in microseconds, never below 0.
  double cost_us(size_t batch) const;
  // t(b) rounded to the nanosecond: a batch's run time on a virtual clock.
  Duration cost(size_t batch) const;
  // t(b) of a batch that starts while `busy` lanes (itself included) are
  // running: from the entry measured with the most lanes not above `busy`,
  // t(b) itself when busy <= 1 or no entry is. Lanes beyond the most
  // measured cost what that many cost.
  double cost_us(size_t batch, size_t busy) const;
  Duration cost(size_t batch, size_t busy) const;
  // The same in an engine of `lanes` lanes: a batch that starts with fewer
  // of them running takes that engine's `alone` curve where one was
  // measured; otherwise as cost_us(batch, busy).
  double cost_us(size_t batch, size_t busy, size_t lanes) const;
  Duration cost(size_t batch, size_t busy, size_t lanes) const;
  // In a model from_run() made with busy above 1: t(b) of the run's batches
  // that started with fewer lanes running; calibrated() keeps it as that
  // many lanes' `alone` curve. Empty otherwise.
  const std::vector<CostPoint>& alone() const { return alone_; }
  const std::vector<LaneCostPoints>& lanes() const { return lanes_; }
  // The jitter's relative half-width at b, in [0, 1).
  double spread(size_t batch) const;
  // A batch of b's run time over t(b) at quantile u in [0, 1].
  double jitter_factor(size_t batch, double u) const;
  // True when some point has a spread above 0 or quantiles that differ.
  bool has_jitter() const;
  // The sizes whose profile did not settle ("b = 16, 32"); empty when all did.
  std::string unsettled() const;
  const JitterStreak& streak() const { return streak_; }
  // The turnaround measured with the most lanes not above `lanes` (the
  // model's own for 1 and as the fallback).
  const Turnaround& turnaround(size_t lanes = 1) const;
  CostModel with_turnaround(Turnaround t) const;
  // The streak measured with the most lanes not above `lanes` (the model's
  // own when no lanes entry has one).
  const JitterStreak& streak(size_t lanes) const;
  // This model with `streak` (weight and rho clamped into range).
  CostModel with_streak(JitterStreak streak) const;
  // A request's time outside its batch at quantile u in [0, 1] (interpolated
  // between the measured quantiles), in microseconds; 0 when none was
  // measured.
  double overhead_us(double u) const;
  bool has_overhead() const { return !overhead_us_.empty(); }
  const std::vector<double>& overheads_us() const { return overhead_us_; }
  // The overhead quantiles measured with the most lanes not above `lanes`
  // (the model's own when no lanes entry has any); empty when none was.
  const std::vector<double>& overheads_us(size_t lanes) const;
  // The send lag measured with the most lanes not above `lanes`, as the
  // overhead is chosen; empty when none was.
  const SendLagModel& send_lag(size_t lanes) const;
  // The overhead of answering a batch of `batch` with `lanes` lanes: the
  // band of its size measured with those lanes (or the nearest fewer), else
  // the nearest band measured, else overheads_us(lanes).
  const std::vector<double>& overheads_us(size_t lanes, size_t batch) const;
  bool has_send_lag() const { return !send_lag_.empty(); }
  // The value at quantile u in [0, 1] of ascending quantiles q,
  // interpolated; 0 when q is empty.
  static double quantile_of(const std::vector<double>& q, double u);

  const std::vector<CostPoint>& points() const { return points_; }
  // This model with t(b, L) over a grid (validated); an empty grid drops it.
  Expected<CostModel> with_length_grid(LengthGrid grid) const;
  const LengthGrid& length_grid() const { return length_grid_; }
  // What a batch of b padded to L takes beyond t(b) (measured at the grid's
  // reference length), in microseconds; 0 without a grid or for length 0.
  double length_extra_us(size_t batch, uint32_t length) const {
    return length_grid_.extra_us(batch, length);
  }
  // This model with a measured preprocess cost (validated; empty drops it).
  Expected<CostModel> with_preprocess(PreprocessCost preprocess) const;
  const PreprocessCost& preprocess() const { return preprocess_; }
  // from_run() of a run whose lanes prepared their requests and whose t(b)
  // holds that (above).
  bool lanes_prepared() const { return lanes_prepared_; }
  // "t(b) from 2 points: 520 us at b=1 .. 1140 us at b=32"
  std::string describe() const;

 private:
  explicit CostModel(std::vector<CostPoint> points) : points_(std::move(points)) {}
  // The two points of `points` to interpolate or extrapolate b between.
  static size_t segment(const std::vector<CostPoint>& points, size_t batch);
  static double interpolate(const std::vector<CostPoint>& points, size_t batch);

  std::vector<CostPoint> points_;
  std::vector<double> overhead_us_;  // quantiles, ascending; empty when not measured
  SendLagModel send_lag_;            // empty when not measured
  std::vector<std::vector<double>> overhead_by_size_;  // by size band; empty when not measured
  double capacity_rps_ = 0;                            // measured with one lane; 0: not
  std::vector<CostPoint> alone_;                       // from_run() with busy > 1
  std::vector<LaneCostPoints> lanes_;  // by lanes, ascending; empty when not measured
  JitterStreak streak_;
  Turnaround turnaround_;
  LengthGrid length_grid_;              // empty: lengths do not vary, or were not measured
  PreprocessCost preprocess_;           // empty: no preprocess, or not measured
  bool lanes_prepared_ = false;         // from_run() of preprocess_workers 0 (calibrated())
  std::vector<CostEvidence> evidence_;  // oldest first, at most kMaxEvidence
};

}  // namespace batchscope
