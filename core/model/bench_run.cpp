// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/bench_run.h"

#include <algorithm>

#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_calibration.h"
#include "tuning/cost_drift.h"
#include "tuning/predict_bounds.h"
#include "tuning/predictor.h"

namespace batchscope {

namespace {

// Each figure's lowest and highest over the draws so far.
void widen_draws(PredictedBand& band, const RunLatency& l) {
  for (double RunLatency::*q :
       {&RunLatency::p50_ms, &RunLatency::p90_ms, &RunLatency::p95_ms, &RunLatency::p99_ms,
        &RunLatency::p999_ms, &RunLatency::max_ms, &RunLatency::mean_ms}) {
    band.draws_low.*q = band.draws == 0 ? l.*q : std::min(band.draws_low.*q, l.*q);
    band.draws_high.*q = band.draws == 0 ? l.*q : std::max(band.draws_high.*q, l.*q);
  }
  ++band.draws;
}

}  // namespace

Expected<RunData> predict_bench(const LocalModel& model, const Options& options,
                                const ArrivalSpec& spec, const CostChoice& cost_choice,
                                const std::optional<LengthDist>& seq_len, const RunConfig& config,
                                const Say& say) {
  auto cost = prediction_cost(model.choice(), options, {options.num_lanes}, options.max_batch_size,
                              cost_choice, "bench", say);
  if (!cost) return cost.error();
  say.out("Batchscope bench: %s -> predicted (%s)\n  cost: %s\n", config.pattern.c_str(),
          cost->cost.describe().c_str(), cost->source.c_str());
  // The lanes' capacity; a model with preprocess is bound by its pool too,
  // which the run below replays.
  if (cost->cost.preprocess().empty()) {
    say.out(
        "  capacity: %.0f req/s with %u lane(s) and batches up to %u (t(b) and the "
        "lanes' turnaround)\n",
        capacity_rps(cost->cost, options.num_lanes, options.max_batch_size), options.num_lanes,
        options.max_batch_size);
  }
  PredictSpec ps;
  ps.arrivals = bounded_for_prediction(spec);
  ps.options = options;
  ps.cost = cost->cost;
  ps.plan_on_cost = true;
  ps.lengths = prediction_lengths(model.metadata(), seq_len, spec.seed, cost->cost, "bench", say);
  if (!ps.lengths.empty()) {
    say.out("  lengths: %s\n",
            seq_len.value_or(default_lengths(model.metadata())).describe().c_str());
  }
  RunData run = predict_run(ps);
  run.config = config;
  // The band: the same prediction on the machine as it moves (tuning/cost_drift.h).
  const BandFactors f = band_factors(drift_of(cost->cost));
  PredictedBand band;
  band.fast = f.low;
  band.slow = f.high;
  band.source = f.source;
  ps.plan_cost = cost->cost;
  for (const bool slow : {false, true}) {
    ps.cost = cost->cost.scaled(slow ? f.high : f.low);
    const RunSummary s = summarize_run(predict_run(ps), std::chrono::seconds(1));
    (slow ? band.at_slow : band.at_fast) = s.latency;
    (slow ? band.rps_slow : band.rps_fast) = s.throughput_rps;
  }
  // The run's own noise: other draws of the same traffic, at the nominal cost.
  ps.cost = cost->cost;
  for (int k = 1; k <= kPredictedDraws; ++k) {
    ArrivalSpec other = spec;
    other.seed = spec.seed + 7919 * static_cast<uint64_t>(k);
    ps.arrivals = bounded_for_prediction(other);
    const RunLatency l = summarize_run(predict_run(ps), std::chrono::seconds(1)).latency;
    widen_draws(band, l);
  }
  run.band = std::move(band);
  return run;
}

Expected<AdaptivePlanner> live_planner(const ModelChoice& model, const std::string& plan_file,
                                       const char* command, const Say& say) {
  if (plan_file.empty()) return adaptive_planner_for(model, command, say);
  auto cost = CostModel::from_file(plan_file);
  if (!cost) return invalid_argument("--plan-cost: " + cost.error().message);
  say.out("adaptive plans on %s (%s)\n", plan_file.c_str(), cost->describe().c_str());
  return plan_on_cost(std::move(*cost));
}

Expected<CostOut> cost_out_of(const RunData& run, const ModelChoice& model,
                              const std::optional<CostModel>& refining, uint32_t lanes,
                              const std::string& path, const Say& say) {
  // A refinement with several lanes refines their curve: the batches that
  // ran beside the others.
  std::optional<CostModel> kept;
  if (has_lengths(run.batches)) kept = kept_cost(model);
  auto observed =
      CostModel::from_run(run, 5, refining ? lanes : 1u, kept ? kept->length_grid() : LengthGrid{});
  if (!observed) return invalid_argument("--cost-out: " + observed.error().message);
  if (!refining) return CostOut{observed->to_json(), "t(b) as the engine ran it; --cost reads it"};
  std::string seen;
  for (const CostPoint& p : observed->points()) {
    if (!seen.empty()) seen += ", ";
    seen += std::to_string(p.batch);
  }
  const CostModel refined = refining->calibrated(*observed, lanes);
  say.out("  refined %s with t(b) at b = %s as %u lane(s) ran it:\n", path.c_str(), seen.c_str(),
          lanes);
  for (const CostPoint& p : observed->points()) {
    const double was = refining->cost_us(p.batch, lanes);
    say.out("    b = %u: %.1f us, was %.1f (%+.0f%%)\n", p.batch, p.median_us, was,
            was > 0 ? 100.0 * (p.median_us / was - 1.0) : 0.0);
  }
  return CostOut{refined.to_json(), "t(b) refined by this run; --cost reads it"};
}

}  // namespace batchscope
