// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/planned_tune.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/text_out.h"
#include "model/history_keeping.h"
#include "model/kept_tune.h"
#include "model/lm_tune_parts.h"
#include "runs/machine_facts.h"
#include "traffic/llm_trace.h"
#include "tuning/cost_drift.h"
#include "tuning/gen_headroom.h"
#include "tuning/gen_predictor.h"
#include "tuning/tune_headroom.h"

namespace batchscope {
namespace {

WorkError plan_refused(std::string message) { return WorkError{std::move(message), true}; }
WorkError plan_failed(std::string message) { return WorkError{std::move(message), false}; }

// One tensor parallelism: the model planned there and what its search found.
struct AtTp {
  uint32_t tp = 1;
  PlannedLm planned;
  GenTuneResult result;
  double capacity_rps = 0;  // one replica's; 0: not looked for, or none
  std::string max_rate_json;
  uint32_t replicas = 1, min_replicas = 1;
  bool feasible() const { return static_cast<bool>(result.best); }
  uint32_t gpus() const { return tp * replicas; }
};

std::string plan_json(const ServingPlan& p, const AtTp& at) {
  std::string j = "{\"model_id\":";
  append_json_string(j, p.model_id);
  j += ",\"model_config\":";
  append_json_string(j, p.model_config);
  j += ",\"gpu\":";
  append_json_string(j, p.gpu);
  j += ",\"tp\":" + std::to_string(p.tp);
  j += ",\"dtype\":";
  append_json_string(j, p.dtype);
  j += ",\"kv_dtype\":";
  append_json_string(j, p.kv_dtype);
  j += ",\"gpu_memory_utilization\":";
  append_json_number(j, p.gpu_memory_utilization);
  j += ",\"block_size\":" + std::to_string(at.planned.roofline.setup().block_size);
  j += ",\"kv_cache_tokens\":" + std::to_string(at.planned.roofline.kv_cache_tokens());
  j += ",\"replicas\":" + std::to_string(p.replicas);
  j += ",\"min_replicas\":" + std::to_string(p.min_replicas);
  j += ",\"gpus\":" + std::to_string(p.gpus());
  j += ",\"target_rate_rps\":";
  append_json_number(j, p.target_rate_rps);
  j += ",\"capacity_rps\":";
  append_json_number(j, p.capacity_rps);
  j += ",\"headroom\":";
  append_json_number(j, p.headroom);
  j += ",\"e2e_p50_ms\":";
  append_json_number(j, p.e2e_p50_ms);
  j += ",\"caveats\":[";
  for (size_t i = 0; i < p.caveats.size(); ++i) {
    if (i) j += ',';
    append_json_string(j, p.caveats[i]);
  }
  return j + "]}";
}

std::string per_tp_json(const std::vector<AtTp>& all, int quantile) {
  std::string j = "[";
  for (const AtTp& a : all) {
    if (j.size() > 1) j += ',';
    j += "{\"tp\":" + std::to_string(a.tp);
    j += ",\"kv_cache_tokens\":" + std::to_string(a.planned.roofline.kv_cache_tokens());
    j += ",\"capacity_rps\":";
    append_json_number(j, a.capacity_rps);
    j += ",\"replicas\":" + std::to_string(a.replicas);
    j += ",\"gpus\":" + std::to_string(a.gpus());
    j += ",\"best\":";
    j += a.result.best ? "{\"options\":" + options_to_json(a.result.best->options) +
                             ",\"predicted\":" + gen_figures_json(*a.result.best, quantile) + "}"
                       : std::string("null");
    j += '}';
  }
  return j + ']';
}

// Whether `a` beats `b` across parallelisms (planned_tune.h).
bool better(const AtTp& a, const AtTp& b, const LmTuneRequest& t) {
  if (a.feasible() != b.feasible()) return a.feasible();
  if (t.target_rate > 0) {
    if (a.gpus() != b.gpus()) return a.gpus() < b.gpus();
    return a.tp < b.tp;
  }
  if (t.max_rate) return a.capacity_rps / a.tp > b.capacity_rps / b.tp * (1 + kThroughputBand);
  if (!a.feasible()) return false;
  const GenEvaluated& x = *a.result.best;
  const GenEvaluated& y = *b.result.best;
  switch (t.objective) {
    case GenObjective::kGoodput:
      return x.goodput_rps / a.tp > y.goodput_rps / b.tp * (1 + kThroughputBand);
    case GenObjective::kThroughput:
      return x.tokens_per_s / a.tp > y.tokens_per_s / b.tp * (1 + kThroughputBand);
    case GenObjective::kLatency: return x.ttft_ms < y.ttft_ms;
  }
  return false;
}

}  // namespace

namespace {
constexpr uint64_t kLargestDefaultBudget = 16384;  // default_planned_space_text()'s
}  // namespace

Options planned_reserve(const TuneSpace& space, Options base) {
  for (const TuneDimension& d : space.dimensions()) {
    if (d.values.empty()) continue;
    const auto most = static_cast<uint32_t>(*std::max_element(d.values.begin(), d.values.end()));
    if (d.field == "max_num_seqs") base.max_num_seqs = most;
    if (d.field == "max_num_batched_tokens") base.max_num_batched_tokens = most;
  }
  return base;
}

ServingPlan plan_for_export(const PlanChoice& choice, const std::string& model_id,
                            const PlannedLm& planned, const Options& reserve) {
  const RooflineSetup& s = planned.roofline.setup();
  ServingPlan p;
  p.model_id = model_id;
  if (p.model_id.empty()) p.model_id = s.model.name_or_path;
  if (p.model_id.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path path = fs::absolute(choice.model_config, ec);
    if (!fs::is_directory(path, ec)) path = path.parent_path();
    p.model_id = path.lexically_normal().string();
  }
  p.model_config = choice.model_config;
  p.gpu = s.gpu.name;
  p.tp = s.tp;
  p.dtype = s.dtype;
  p.kv_dtype = s.kv_dtype.empty() ? s.dtype : s.kv_dtype;
  p.gpu_memory_utilization = s.memory_utilization;
  p.caveats = {
      "Each step's time is the roofline's: the larger of its FLOPs over the GPU's peak and its "
      "bytes over its bandwidth, each at the fitted efficiency, plus a fixed overhead a step "
      "and a request (" +
          planned.roofline.constants().fitted_on +
          "): that engine's kernels, with CUDA graphs, on a GPU running nothing else.",
      "Prefix caching off: every prompt is prefilled in full.",
      "Lengths are tokens of the model's own tokenizer, as given; each request runs to its "
      "max_tokens.",
      "One KV cache for every configuration searched: the activations' reserve is that of "
      "max_num_seqs " +
          std::to_string(reserve.max_num_seqs) + " and max_num_batched_tokens " +
          std::to_string(reserve.max_num_batched_tokens) + ", the space's largest.",
  };
  return p;
}

std::string default_planned_space_text() {
  return "scheduling=continuous,max_num_seqs=8..512,max_num_batched_tokens=512..16384";
}

std::optional<WorkError> tune_planned_lm(const LmTuneRequest& request, LmTuneReport& report) {
  LmTuneRequest t = request;
  const Say& say = report.say();
  const auto start = std::chrono::steady_clock::now();
  const SteadyTime deadline =
      start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(t.budget_s));
  if (t.space_text.empty()) {
    t.space_text = default_planned_space_text();
    // Chunked prefill off needs a whole prompt in one step: searched by
    // default where the context fits the largest budget.
    const auto shape = read_model_config(t.plan->model_config);
    const uint64_t context = t.plan->max_model_len > 0 ? t.plan->max_model_len
                             : shape                   ? shape->max_position
                                                       : 0;
    if (context > 0 && context <= kLargestDefaultBudget) t.space_text += ",chunked_prefill=1|0";
  }
  auto space = parse_gen_space(t.space_text);
  if (!space) return plan_refused("--space: " + space.error().message);
  if ((t.max_rate || t.target_rate > 0) && t.traffic.pattern == Pattern::kClosed) {
    return plan_refused(std::string(t.max_rate ? "--max-rate" : "--target-rate") +
                        " scales the arrival rate; a closed loop has none (use --pattern poisson, "
                        "burst, ... or a trace)");
  }
  std::vector<uint32_t> tps = t.tps.empty() ? std::vector<uint32_t>{t.plan->tp} : t.tps;
  // One cache for the space: the reserve of its largest step.
  const Options reserve = planned_reserve(*space, t.base);
  const double headroom = t.headroom > 0 ? t.headroom : kDefaultBand;
  GenTuneSettings settings;
  settings.slo = t.slo;
  settings.objective = t.objective;

  std::vector<AtTp> all;
  std::string refusals;
  for (uint32_t tp : tps) {
    PlanChoice choice = *t.plan;
    choice.tp = tp;
    auto planned = plan_lm(choice, reserve);
    if (!planned) {
      say.out("  tp %u: %s\n", tp, planned.error().message.c_str());
      refusals += (refusals.empty() ? "" : "; ") + planned.error().message;
      continue;
    }
    AtTp at;
    at.tp = tp;
    at.planned = std::move(*planned);
    all.push_back(std::move(at));
  }
  if (all.empty()) return plan_refused(refusals);
  const LmInfo& first = all.front().planned.info;
  if (const ContextFit fit =
          fit_to_context(t.lengths.replay, static_cast<uint32_t>(first.context_length));
      fit.any()) {
    say.out("  trace: %s\n", fit.describe(static_cast<uint32_t>(first.context_length)).c_str());
  }
  settings.context = static_cast<uint32_t>(std::max(0, first.context_length));
  say.out("plan %s: %s, %s, objective %s\n", first.name.c_str(), t.traffic.describe().c_str(),
          t.slo.describe().c_str(), gen_objective_name(t.objective));
  say.out("  requests: %s\n", t.lengths.describe().c_str());
  say.out("  space: %s (%llu combinations)\n", space->text().c_str(),
          static_cast<unsigned long long>(space->size()));

  auto workload = [&](uint64_t seed) { return t.lengths.workload(seed); };
  for (size_t i = 0; i < all.size(); ++i) {
    AtTp& at = all[i];
    // Each parallelism an equal share of what is left, the last share kept
    // for the final search.
    const auto now = std::chrono::steady_clock::now();
    const SteadyTime share = now + (deadline - now) / static_cast<int64_t>(all.size() - i + 1);
    say.out("\n  %s\n", at.planned.describe().c_str());
    say.out("    step cost: %s\n", at.planned.cost.text().c_str());
    auto at_traffic = [&](const ArrivalSpec& traffic) {
      return predicted_evaluator(traffic, workload, at.planned.info, at.planned.cost, t.slo);
    };
    ArrivalSpec traffic = t.traffic;
    if (t.max_rate || t.target_rate > 0) {
      auto found = find_max_rate(t, *space, settings, share, at_traffic, say);
      if (!found) {
        say.out("    %s\n", found.error().message.c_str());
        continue;
      }
      at.capacity_rps = mean_rate(found->traffic);
      at.max_rate_json = found->json;
      traffic = found->traffic;
      if (t.target_rate > 0) {
        at.min_replicas =
            static_cast<uint32_t>(std::clamp(std::ceil(t.target_rate / at.capacity_rps), 1.0, 1e6));
        at.replicas = static_cast<uint32_t>(
            std::clamp(std::ceil(t.target_rate * (1 + headroom) / at.capacity_rps), 1.0, 1e6));
        say.out("    %u replica%s of %u GPU%s for %.4g req/s with %.0f%% held back (%u GPUs)\n",
                at.replicas, at.replicas > 1 ? "s" : "", at.tp, at.tp > 1 ? "s" : "", t.target_rate,
                headroom * 100, at.gpus());
      }
    }
    settings.max_seconds =
        std::max(Seconds(share - std::chrono::steady_clock::now()).count(), 0.001);
    at.result = gen_search(*space, t.base, settings, at_traffic(traffic));
    if (at.result.best) {
      say.out("    best: %s\n", describe_generation(at.result.best->options).c_str());
    } else {
      say.out("    %s\n", at.result.best.error().message.c_str());
    }
  }
  size_t chosen = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    if (better(all[i], all[chosen], t)) chosen = i;
  }
  AtTp& win = all[chosen];
  const PlannedLm& planned = win.planned;
  ArrivalSpec traffic = t.traffic;
  if (t.target_rate > 0 && win.capacity_rps > 0) {
    // Each replica's share of the target rate.
    auto scaled = scaled_traffic(t.traffic, t.target_rate / win.replicas / mean_rate(t.traffic));
    if (scaled) traffic = *scaled;
  } else if (t.max_rate && win.capacity_rps > 0) {
    traffic = *scaled_traffic(t.traffic, win.capacity_rps / mean_rate(t.traffic));
  }
  say.out("\nchosen: tp %u (%s)\n", win.tp, planned.roofline.describe().c_str());
  if (t.target_rate > 0) {
    say.out("  each of %u replicas at %s\n", win.replicas, traffic.describe().c_str());
  }
  const auto final_start = std::chrono::steady_clock::now();
  settings.max_seconds = std::max(Seconds(deadline - final_start).count() / 2, 1.0);
  GenTuneResult result =
      t.target_rate > 0 && win.capacity_rps > 0
          ? gen_search(*space, t.base, settings,
                       predicted_evaluator(traffic, workload, planned.info, planned.cost, t.slo))
          : win.result;
  // Bands and headroom: the roofline's step 1 -+ the headroom.
  HeadroomSettings hs;
  hs.band = band_factors(CostDrift{}, headroom);
  hs.needed = hs.band.high;
  hs.source = hs.band.source;
  hs.rate_applies = rate_scales(traffic);
  const GenScaledEvaluator scaled =
      scaled_predicted_evaluator(traffic, workload, planned.info, planned.cost, t.slo);
  GenHeadroomResult headroom_result;
  if (result.best) {
    headroom_result = gen_rank_by_headroom(result, scaled, hs);
    if (const GenEvaluated* c = headroom_result.chosen()) result.best = *c;
    band_gen_front(result.pareto, headroom_result, scaled);
  }
  // The seconds of every search, each parallelism's and the last.
  report.searched(result, Seconds(std::chrono::steady_clock::now() - start).count());
  if (result.best) say.out("%s", gen_headroom_table(headroom_result, t.slo).c_str());

  ServingPlan plan = plan_for_export(*t.plan, t.model_id, planned, reserve);
  plan.replicas = win.replicas;
  plan.min_replicas = win.min_replicas;
  plan.target_rate_rps = t.target_rate;
  plan.capacity_rps = win.capacity_rps;
  plan.headroom = headroom;
  plan.e2e_p50_ms = result.best ? result.best->e2e_p50_ms : 0.0;
  std::vector<std::pair<std::string, std::string>> members;
  auto member_string = [&](const char* key, const std::string& value) {
    std::string v;
    append_json_string(v, value);
    members.emplace_back(key, v);
  };
  member_string("model", planned.info.name);
  members.emplace_back("lm", gen_model_json(planned.info));
  member_string("model_file", "");
  members.emplace_back("plan", plan_json(plan, win));
  member_string("traffic", traffic.describe());
  member_string("workload", t.lengths.describe());
  {
    std::string c = "{\"roofline\":";
    append_json_string(c, planned.roofline.describe());
    c += ",\"text\":";
    append_json_string(c, planned.cost.text());
    c += ",\"source\":";
    append_json_string(c, "the roofline's constants: " + planned.roofline.constants().fitted_on);
    members.emplace_back("step_cost", c + '}');
  }
  if (!win.max_rate_json.empty()) members.emplace_back("max_rate", win.max_rate_json);
  members.emplace_back("per_tp", per_tp_json(all, t.slo.quantile));
  if (result.best) members.emplace_back("headroom", gen_headroom_json(headroom_result));
  const std::string json = gen_tune_json(result, std::nullopt, members);
  if (!result.best) {
    report.finished(LmTuneFinish{json, std::nullopt, std::nullopt, t.slo.quantile});
    return plan_failed(result.best.error().message);
  }
  say.out("\nplanned: %s on %s, tp %u x %u replica%s (%u GPU%s)\n",
          describe_generation(result.best->options).c_str(),
          planned.roofline.setup().gpu.name.c_str(), win.tp, win.replicas,
          win.replicas > 1 ? "s" : "", win.gpus(), win.gpus() > 1 ? "s" : "");
  for (const std::string& n : plan.caveats) say.out("  assumed: %s\n", n.c_str());
  report.finished(LmTuneFinish{json, *result.best, std::nullopt, t.slo.quantile});
  RunConfig config;
  config.pattern = traffic.describe();
  config.target = "predict";
  config.model = planned.info.name;
  config.options = result.best->options;
  config.duration_s = traffic.duration_s;
  config.seed = traffic.seed;
  KeptTune kept(t.history,
                "plan: " + planned.roofline.describe() + ", " + traffic.describe() + " within " +
                    t.slo.describe(),
                std::move(config), run_context_json(t.plan->model_config, "planned"),
                SteadyClock().now(), json, say);
  kept.report();
  return std::nullopt;
}

}  // namespace batchscope
