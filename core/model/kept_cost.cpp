// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/kept_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "batching/synthetic_runner.h"
#include "common/text_out.h"
#include "runs/machine_load.h"
#include "traffic/varied_inputs.h"
#include "tuning/adaptive_planner.h"
#include "tuning/cost_calibration.h"
#ifdef BATCHSCOPE_WITH_HISTORY
#include "runs/run_context.h"
#endif
#ifdef BATCHSCOPE_WITH_TORCH
#include "model/model_profile.h"
#include "torch/profile.h"
#include "torch/torch_info.h"
#endif

namespace batchscope {

namespace {

// The largest size the cache profiles, when the model allows it.
constexpr uint32_t kCacheMaxBatch = 256;

std::string number(double v) {
  std::string s;
  append_number(s, v, "0");
  return s;
}

// "synthetic:A,C,L,J,spin" or "...,sleep": what the synthetic model's cost is.
std::string synthetic_id(const SyntheticCost& c) {
  return "synthetic:" + number(c.fixed_us) + "," + number(c.per_item_us) + "," + number(c.log_us) +
         "," + number(c.jitter) + (c.busy_spin ? ",spin" : ",sleep");
}

// The model's t(b) before any live run: the synthetic formula, or a profile
// measured now (with `lanes` at once when above 1).
Expected<CostModel> base_cost(const ModelChoice& model, uint32_t max_batch, uint32_t lanes,
                              const char* command, const Say& say) {
  if (model.synthetic) return CostModel::from_synthetic(*model.synthetic, max_batch);
#ifdef BATCHSCOPE_WITH_TORCH
  say.out(
      "%s:   profiling t(b) up to b = %u%s\n", command, max_batch,
      lanes > 1 ? (", alone and with " + std::to_string(lanes) + " lanes at once").c_str() : "");
  ProfileOptions p;
  p.device = model.device;
  p.max_batch = max_batch;
  p.lanes = lanes;
  p.on_point = [command, &say](const ProfilePoint& pt) {
    say.out("%s:     b = %u: %.1f us%s\n", command, pt.batch, pt.measured_us,
            pt.settled ? "" : (" (did not settle: " + pt.why + ")").c_str());
  };
  p.on_grid_point = [command, &say](uint32_t b, uint32_t length, double us) {
    say.out("%s:     b = %u padded to %u: %.1f us\n", command, b, length, us);
  };
  auto r = profile_choice(model, p);
  if (!r) return r.error();
  if (!r->competing.empty()) {
    say.err("%s: warning: the machine was busy while profiling: %s\n", command,
            r->competing.c_str());
  }
  if (!r->settled) {
    say.err(
        "%s: warning: t(b) did not settle at %s; the live calibration that follows "
        "measures those sizes again under load\n",
        command, unsettled_text(r->points).c_str());
  }
  return CostModel::from_profile_json(profile_json(*r));
#else
  (void)lanes, (void)command, (void)say;
  return invalid_argument("measuring a model needs LibTorch; give --cost FILE or --synthetic");
#endif
}

// The largest size worth profiling for the cache: the model's, up to 256,
// and at least what the prediction asks.
uint32_t cache_max_batch(const ModelChoice& model, uint32_t max_batch) {
  auto m = LocalModel::open(model);
  const uint32_t most = m ? m->metadata().max_batch_size : max_batch;
  return std::max(max_batch, std::min(most, kCacheMaxBatch));
}

// Calibrates `cost` live for each of `lanes` (printing a line each); the
// model's runners are made for each lane count as the engine would make them.
Status calibrate_cost(const ModelChoice& model, const Options& base, CostModel& cost,
                      const std::vector<uint32_t>& lanes, uint32_t max_batch, double seconds,
                      const char* command, const Say& say) {
  const std::string when = utc_now_ms();
  for (uint32_t n : lanes) {
    Options o = cache_calibration_options(base, max_batch, n);
    // A model with preprocess: its pool prepares, so the lanes run t(b) alone.
    o.preprocess_workers = std::max(1u, o.preprocess_workers);
    say.out(
        "%s:   calibrating %u lane(s) under load: %s s (a closed loop of %u in flight "
        "for the capacity, then steps at 10%%..85%% of it; fifo, 1 ms wait, batches up "
        "to %u)\n",
        command, n, number(seconds).c_str(),
        probe_traffic(max_batch, o.queue_capacity, seconds).concurrency, max_batch);
    auto opened = LocalModel::open(model);
    if (!opened) return opened.error();
    auto factory = opened->runners(o);
    if (!factory) return factory.error();
    ConfirmSpec spec;
    spec.factory = *factory;
    spec.stage = opened->prepare_stage(o);
    spec.metadata = opened->metadata();
    const LoadWatch others;
    auto c = calibrate_lanes(spec, o, cost, n, max_batch, seconds, when);
    if (!c) return c.error();
    if (const CompetingLoad load = others.load(); load.busy()) {
      say.out(
          "%s:     note: the machine was busy meanwhile (%s); t(b) was measured under "
          "that load\n",
          command, load.describe().c_str());
    }
    if (c->counted == 0) {
      say.out(
          "%s:     %zu batches, none of a size that ran 5 times with %u lane(s) busy: "
          "nothing refined (a run longer than --calibration-seconds %s would see more)\n",
          command, c->batches, n, number(seconds).c_str());
    } else {
      say.out(
          "%s:     capacity %.0f req/s; steps at %s..%s req/s: %zu batches (%llu "
          "counted), p50 %.2f ms, p99 %.2f ms; t(b) moved %+.0f%% (median over the sizes "
          "seen)\n",
          command, c->capacity, number(c->traffic.steps.front().first).c_str(),
          number(c->traffic.steps.back().first).c_str(), c->batches,
          static_cast<unsigned long long>(c->counted), c->p50_ms, c->p99_ms, 100 * c->moved);
    }
  }
  return Status::Ok();
}

// Says on stderr where a --cost file was made when that is not here.
void note_origin(const std::string& file, const ModelChoice& model, const char* command,
                 const Say& say) {
  auto key = cost_key_for(model);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!key || text.str().find("\"made_for\"") == std::string::npos) return;
  if (Status s = check_made_for(text.str(), *key, file); !s) {
    say.err("%s: note: %s; used all the same, as --cost names it\n", command, s.message().c_str());
  }
}

}  // namespace

Expected<CostKey> cost_key_for(const ModelChoice& model) {
  CostKey key;
  key.device = model.device;
#ifdef BATCHSCOPE_WITH_HISTORY
  std::string torch = "{}";
  if (model.synthetic) {
    key.model = "synthetic";
    key.model_id = synthetic_id(*model.synthetic);
    key.device = "cpu";
  } else {
    auto facts = file_facts(model.path);
    if (!facts) return facts.error();
    auto m = LocalModel::open(model);
    // A build that cannot open the model (no LibTorch) names it by its file.
    key.model = m ? m->name() : std::filesystem::path(model.path).stem().string();
    key.model_id = "sha256:" + facts->sha256;
#ifdef BATCHSCOPE_WITH_TORCH
    const TorchInfo t = torch_info();
    torch = "{\"version\":";
    append_json_string(torch, t.torch_version);
    torch += ",\"blas\":";
    append_json_string(torch, t.blas_name);
    torch += ",\"blas_library\":";
    append_json_string(torch, t.blas_library);
    torch += "}";
#endif
  }
  key.machine = "{\"machine\":" + machine_json() + ",\"torch\":" + torch + "}";
  return key;
#else
  (void)model;
  return invalid_argument(
      "this build keeps no cost cache (it has no run history to fingerprint a model file)");
#endif
}

Expected<PredictionCost> prediction_cost(const ModelChoice& model, const Options& base,
                                         const std::vector<uint32_t>& lanes, uint32_t max_batch,
                                         const CostChoice& choice, const char* command,
                                         const Say& say) {
  PredictionCost out;
  if (!choice.file.empty()) {
    auto m = CostModel::from_file(choice.file);
    if (!m) return invalid_argument("--cost: " + m.error().message);
    if (const std::string u = m->unsettled(); !u.empty()) {
      say.err(
          "%s: warning: %s was profiled on a busy machine; t(b) did not settle at %s, "
          "so predictions there are not to be trusted\n",
          command, choice.file.c_str(), u.c_str());
    }
    note_origin(choice.file, model, command, say);
    out.cost = std::move(*m);
    out.source = "--cost " + choice.file;
    return out;
  }
  auto key = cost_key_for(model);
  const std::string dir = cost_cache_dir();
  if (!key || dir.empty()) {
    say.out("%s: no cost cache (%s); measuring t(b) now\n", command,
            key ? "neither XDG_CACHE_HOME nor HOME is set" : key.error().message.c_str());
    auto m = base_cost(model, max_batch, 1, command, say);
    if (!m) return m.error();
    out.cost = std::move(*m);
    out.source = "measured now, not kept";
    return out;
  }
  out.key = *key;
  out.path = cost_cache_path(*key, dir);
  std::optional<CostModel> kept;
  if (!choice.recalibrate) {
    auto read = read_cached_cost(out.path, *key);
    if (!read) {
      say.out("%s: refused the kept cost: %s; making it anew\n", command,
              read.error().message.c_str());
    } else {
      kept = std::move(*read);
    }
  }
  if (kept && kept->preprocess().pool.empty() && is_python_file(model.path)) {
    auto opened = LocalModel::open(model);
    if (opened && opened->prepare_stage({}) && !opened->metadata().examples.empty()) {
      say.out("%s: the kept cost has no measure of the model's preprocess; making it anew\n",
              command);
      kept.reset();
    }
  }
  std::vector<uint32_t> missing;
  for (uint32_t n : lanes) {
    if (!kept || !calibrated_for(*kept, n)) missing.push_back(n);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  const uint32_t top = cache_max_batch(model, max_batch);
  if (kept && missing.empty()) {
    out.cost = std::move(*kept);
    out.source = "cached in " + out.path;
    if (out.cost.points().back().batch < max_batch) {
      say.err(
          "%s: note: the kept cost reaches b = %u; beyond it t(b) is extrapolated "
          "(--recalibrate measures up to %u)\n",
          command, out.cost.points().back().batch, top);
    }
    return out;
  }
  if (!kept) {
    say.out(
        "%s: no calibrated cost of %s on this machine yet; making %s (the profile, then "
        "%s s of live traffic per lane count; later predictions reuse it)\n",
        command, key->model.c_str(), out.path.c_str(), number(choice.calibration_s).c_str());
    // Two lanes at once are profiled even for a one-lane prediction: the
    // calibration of a second lane count, added later, steps its traffic
    // through the capacity that curve gives.
    const uint32_t most = std::max<uint32_t>(missing.empty() ? 1 : missing.back(), 2);
    auto m = base_cost(model, top, most, command, say);
    if (!m) return m.error();
    kept = std::move(*m);
  } else {
    say.out("%s: the kept cost %s has no calibration with %s lane(s); adding it\n", command,
            out.path.c_str(), std::to_string(missing.front()).c_str());
  }
  if (Status s =
          calibrate_cost(model, base, *kept, missing, top, choice.calibration_s, command, say);
      !s) {
    return s.error();
  }
  if (Status s = write_cached_cost(out.path, *key, *kept); !s) {
    say.err("%s: warning: %s; the cost is used but not kept\n", command, s.message().c_str());
  } else {
    say.out("%s:   kept in %s\n", command, out.path.c_str());
  }
  out.cost = std::move(*kept);
  out.source = "made now in " + out.path;
  return out;
}

namespace {

// "refined the kept preprocess cost (in the pool with 1 busy, 880
// requests: 9.50 -> 8.40 ms)", where a refinement moved it.
void say_preprocess_moves(const CostRefinement& f, const Say& say) {
  std::string pre;
  for (const PreprocessMove& m : f.preprocess) {
    const std::string where =
        m.busy ? "in the pool with " + std::to_string(m.busy) + " busy" : std::string("in a lane");
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s, %llu requests: %.2f -> %.2f ms", pre.empty() ? "" : "; ",
                  where.c_str(), static_cast<unsigned long long>(m.requests), m.was_us / 1000,
                  m.now_us / 1000);
    pre += buf;
  }
  if (!pre.empty()) say.out("  refined the kept preprocess cost (%s)\n", pre.c_str());
}

}  // namespace

std::optional<CostRefinement> refine_cost_cache(const ModelChoice& model, const RunData& run,
                                                uint32_t lanes, const char* command,
                                                const Say& say) {
  // A run whose batches vary in length refines nothing of t(b): read back
  // at the reference length, a batch near a cliff that the grid draws as a
  // slope moved t(32) from 2 ms to 288 ms (docs/tuning.md). Its requests'
  // preprocess, which no padding touches, refines that part.
  if (has_lengths(run.batches)) {
    const PreprocessCost seen = PreprocessCost::from_run(run);
    if (seen.empty()) return std::nullopt;
    auto key = cost_key_for(model);
    const std::string dir = cost_cache_dir();
    if (!key || dir.empty()) return std::nullopt;
    auto r = refine_cached_preprocess(cost_cache_path(*key, dir), *key, seen);
    if (!r) {
      say.err("%s: the kept cost was not refined: %s\n", command, r.error().message.c_str());
      return std::nullopt;
    }
    if (*r) say_preprocess_moves(**r, say);
    return std::move(*r);
  }
  auto observed = CostModel::from_run(run, 5, lanes);
  if (!observed) return std::nullopt;
  return refine_cost_cache(model, *observed, lanes, command, say,
                           run.others ? &*run.others : nullptr);
}

std::optional<CostRefinement> refine_cost_cache(const ModelChoice& model, const CostModel& observed,
                                                uint32_t lanes, const char* command, const Say& say,
                                                const CompetingLoad* others) {
  auto key = cost_key_for(model);
  const std::string dir = cost_cache_dir();
  if (!key || dir.empty()) return std::nullopt;
  const std::string path = cost_cache_path(*key, dir);
  auto r = refine_cached_cost(path, *key, observed, lanes, others);
  if (!r) {
    say.err("%s: the kept cost was not refined: %s\n", command, r.error().message.c_str());
    return std::nullopt;
  }
  if (!*r) return std::move(*r);
  const CostRefinement& f = **r;
  if (!f.busy.empty()) {
    say.out("  the kept cost was not refined: %s; the run is kept as evidence, labelled busy\n",
            f.busy.c_str());
    return std::move(*r);
  }
  // The sizes that ran most: a line, not a table.
  std::vector<CostMove> moves = f.moves;
  std::sort(moves.begin(), moves.end(),
            [](const CostMove& a, const CostMove& b) { return a.batches > b.batches; });
  std::string shown;
  for (size_t i = 0; i < moves.size() && i < 4; ++i) {
    const CostMove& m = moves[i];
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sb %u %.0f -> %.0f us", i ? ", " : "", m.batch, m.was_us,
                  m.now_us);
    shown += buf;
  }
  char level[48] = "";
  if (f.level > 0) std::snprintf(level, sizeof level, "; the run at %.2fx the curve", f.level);
  say.out("  refined the kept cost (%u lane(s), %llu batches at %zu sizes: %s%s%s)\n", f.lanes,
          static_cast<unsigned long long>(f.batches), f.moves.size(), shown.c_str(),
          moves.size() > 4 ? ", ..." : "", level);
  if (!f.held.empty()) say.out("    held short: %s\n", f.held.c_str());
  say_preprocess_moves(f, say);
  return std::move(*r);
}

std::optional<CostModel> kept_cost(const ModelChoice& model) {
  auto key = cost_key_for(model);
  const std::string dir = cost_cache_dir();
  if (!key || dir.empty()) return std::nullopt;
  auto kept = read_cached_cost(cost_cache_path(*key, dir), *key);
  if (!kept || !*kept) return std::nullopt;
  return std::move(**kept);
}

AdaptivePlanner adaptive_planner_for(const ModelChoice& model, const char* command,
                                     const Say& say) {
  if (auto kept = kept_cost(model)) {
    say.out("%s: adaptive plans on the kept cost (%s)\n", command, kept->describe().c_str());
    return plan_on_cost(std::move(*kept));
  }
  return make_adaptive_plan;
}

std::vector<uint32_t> prediction_lengths(const ModelMetadata& model,
                                         const std::optional<LengthDist>& seq_len, uint64_t seed,
                                         const CostModel& cost, const std::string& command,
                                         const Say& say) {
  if (!has_variable_inputs(model)) return {};
  if (cost.length_grid().empty()) {
    say.err(
        "batchscope %s: note: model '%s' takes inputs of varying length, and its cost "
        "has no t(b, L) (a kept cost made before it was measured: --recalibrate makes it "
        "anew with one); every batch is priced at the length its cost was measured "
        "with, though the padding policy still picks\n",
        command.c_str(), model.name.c_str());
  }
  return varied_lengths(model, seq_len.value_or(default_lengths(model)), seed, kVariedPool);
}

}  // namespace batchscope
