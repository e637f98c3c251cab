// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/window_loader.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/kept_cost.h"
#include "model/local_model.h"
#include "model/model_paths.h"

#ifdef BATCHSCOPE_WITH_TORCH
#include "common/metadata_json.h"
#include "model/model_profile.h"
#include "model/preprocess_profile.h"
#include "torch/describe.h"
#include "torch/profile.h"
#include "torch/torch_info.h"
#include "torch/torch_model.h"
#endif

namespace batchscope {

namespace {

// Sizes beyond this add little to the curve and seconds to the wait.
constexpr uint32_t kProfileMaxBatch = 256;
constexpr double kSecondsPerPoint = 0.03;

bool is_synthetic(const std::string& path) {
  return path.empty() || path == "synthetic" || path.rfind("synthetic:", 0) == 0;
}

// One message for a load stopped at any step, naming what was loading.
Error cancelled(const ModelRequest& r) {
  return Error{ErrorCode::kCancelled,
               "loading " + (r.path.empty() ? std::string("the synthetic model") : r.path) +
                   " was cancelled"};
}

std::string lanes_text(uint32_t lanes) {
  return std::to_string(lanes) + (lanes == 1 ? " lane" : " lanes");
}

// Least squares through (b, t(b)); sets a, c and 1 + a/c.
void fit(LoadedModel& m) {
  const double n = static_cast<double>(m.profile.size());
  double sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const CostPoint& p : m.profile) {
    sb += p.batch;
    st += p.median_us;
    sbb += static_cast<double>(p.batch) * p.batch;
    sbt += p.batch * p.median_us;
  }
  const double var = n * sbb - sb * sb;
  if (m.profile.size() < 2 || var <= 0) return;
  m.c_us = (n * sbt - sb * st) / var;
  m.a_us = (st - m.c_us * sb) / n;
  m.asymptotic_speedup = m.a_us > 0 && m.c_us > 0 ? 1.0 + m.a_us / m.c_us : 0.0;
}

Expected<LoadedModel> load_synthetic(const ModelRequest& r, const LoadProgress& progress) {
  SyntheticCost cost{.fixed_us = 500, .per_item_us = 20};
  if (const size_t colon = r.path.find(':'); colon != std::string::npos) {
    auto c = parse_synthetic(r.path.substr(colon + 1));
    if (!c) return invalid_argument("model '" + r.path + "': " + c.error().message);
    cost = *c;
  }
  if (r.device != "cpu") {
    return invalid_argument("the synthetic model runs on the CPU only, not on '" + r.device + "'");
  }
  if (r.cancel.cancelled()) return cancelled(r);
  progress(0, "Making the synthetic model");
  ModelChoice choice;
  choice.synthetic = cost;
  auto model = LocalModel::open(choice);
  if (!model) return model.error();
  auto factory = model->runners(r.options);
  if (!factory) return factory.error();
  LoadedModel m;
  m.metadata = model->metadata();
  m.lane_metadata = model->lane_metadata();
  m.factory = *factory;
  m.path = synthetic_path(cost);
  m.synthetic = cost;
  m.blas = "none (the synthetic model only spins)";
  m.threads = "one busy-spinning thread per lane · " + lanes_text(r.options.num_lanes);
  // Its cost is a formula: t(b) is computed, not measured.
  const uint32_t top = std::min(m.metadata.max_batch_size, kProfileMaxBatch);
  for (uint32_t b = 1;; b = std::min(b * 2, top)) {
    m.profile.push_back({b, cost.cost_us(b), 0});
    if (b == top) break;
  }
  fit(m);
  progress(100, "Ready");
  return m;
}

#ifdef BATCHSCOPE_WITH_TORCH

// Engine runners made ahead of the engine: the factory hands lane i the
// instance warmed for it, once.
struct WarmRunners {
  std::mutex mu;
  std::vector<std::unique_ptr<Runner>> lanes;
};

Expected<LoadedModel> load_torch(const ModelRequest& r, const LoadProgress& progress,
                                 int blas_threads) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(r.path, ec)) {
    return invalid_argument("no model file at " + r.path);
  }
  const auto devices = available_devices();
  if (std::find(devices.begin(), devices.end(), r.device) == devices.end()) {
    std::string have;
    for (const auto& d : devices) have += (have.empty() ? "" : ", ") + d;
    return invalid_argument("device '" + r.device + "' is not available; this LibTorch offers " +
                            have);
  }
  const uint32_t lanes = std::max<uint32_t>(1, r.options.num_lanes);
  const std::string file = std::filesystem::path(r.path).filename().string();
  progress(0, "Reading " + (is_python_file(r.path)
                                ? file
                                : std::filesystem::path(sidecar_path(r.path)).filename().string()));

  // The factory reports warm-up and heeds the cancel only while this loader
  // runs: lanes the engine adds later load without a progress bar to report
  // to, and the token belongs to this load, not to the engine's life.
  auto live = std::make_shared<std::atomic<bool>>(true);
  struct EndReports {
    std::shared_ptr<std::atomic<bool>> live;
    ~EndReports() { live->store(false); }
  } end_reports{live};
  auto lane_now = std::make_shared<std::atomic<uint32_t>>(0);
  LoadHooks hooks;
  hooks.blas_threads = blas_threads;
  hooks.workers = std::make_shared<WorkerCounts>();
  hooks.on_warmup = [live, lane_now, lanes, progress](uint32_t b, uint32_t top) {
    if (!live->load()) return;
    const uint32_t lane = lane_now->load();
    const double done = (lane + static_cast<double>(b) / std::max(1u, top)) / lanes;
    progress(5 + static_cast<int>(55 * done),
             "Warming up" +
                 (lanes > 1 ? " lane " + std::to_string(lane + 1) + " of " + std::to_string(lanes)
                            : std::string()) +
                 ": batch " + std::to_string(b) + " of " + std::to_string(top));
  };
  const std::function<bool()> stop = [live, token = r.cancel] {
    return live->load() && token.cancelled();
  };
  hooks.cancelled = stop;
  ModelChoice choice;
  choice.path = r.path;
  choice.device = r.device;
  choice.python = r.python;
  auto model = LocalModel::open(choice);
  if (!model) return model.error();
  if (model->generative()) {
    return invalid_argument(r.path + " is a language model: it opens in the generation view");
  }
  auto fresh = model->runners(r.options, hooks);
  if (!fresh) return fresh.error();

  progress(5, "Loading " + file + " on " + r.device);
  auto warm = std::make_shared<WarmRunners>();
  for (uint32_t i = 0; i < lanes; ++i) {
    if (r.cancel.cancelled()) return cancelled(r);
    lane_now->store(i);
    try {
      warm->lanes.push_back((*fresh)(static_cast<int>(i)));
    } catch (const std::exception& e) {
      // The factory speaks in exceptions; a cancelled warm-up is one too.
      if (r.cancel.cancelled()) return cancelled(r);
      return Error{ErrorCode::kModelError, e.what()};
    }
  }

  LoadedModel m;
  m.metadata = model->metadata();
  m.lane_metadata = model->lane_metadata();
  m.path = r.path;
  m.device = r.device;
  if (is_python_file(r.path)) m.workers = hooks.workers;
  m.python = python_context(*model, lanes, blas_threads);
  auto pool = std::make_shared<WorkerCounts>();
  m.stage = model->prepare_stage(r.options, pool);
  if (m.stage) m.preprocess = pool;
  m.factory = [warm, fresh = *fresh](int lane) -> std::unique_ptr<Runner> {
    {
      std::lock_guard g(warm->mu);
      const auto i = static_cast<size_t>(lane);
      if (lane >= 0 && i < warm->lanes.size() && warm->lanes[i]) return std::move(warm->lanes[i]);
    }
    return fresh(lane);
  };

  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ProfileOptions po;
  po.device = r.device;
  po.max_batch = std::min(m.metadata.max_batch_size, kProfileMaxBatch);
  po.blas_threads = blas_threads > 0 ? blas_threads : std::max(1, cores / static_cast<int>(lanes));
  po.seconds_per_point = kSecondsPerPoint;
  po.cancelled = stop;
  po.length_grid = false;  // the panel draws t(b); the kept cost measures t(b, L)
  const uint32_t points = std::bit_width(po.max_batch - 1) + 1;  // 1, 2, 4, ... and the top
  po.on_point = [progress, points, top = po.max_batch, done = 0u](const ProfilePoint& p) mutable {
    ++done;
    progress(60 + static_cast<int>(40.0 * done / points),
             "Measuring t(b): batch " + std::to_string(p.batch) + " of " + std::to_string(top));
  };
  if (r.cancel.cancelled()) return cancelled(r);
  progress(60, "Measuring t(b) for b = 1 … " + std::to_string(po.max_batch));
  auto prof = profile_choice(choice, po);
  if (!prof && prof.error().code == ErrorCode::kCancelled) return cancelled(r);
  if (!prof) return prof.error();
  for (const ProfilePoint& p : prof->points) {
    m.profile.push_back({p.batch, p.median_us, p.spread, p.run_quantiles, p.settled});
  }
  m.unsettled = unsettled_text(prof->points);
  m.a_us = prof->a_us;
  m.c_us = prof->c_us;
  m.asymptotic_speedup = prof->asymptotic_speedup;

  if (m.stage && !model->metadata().examples.empty()) {
    // What one pool process takes a request, for the traffic's starting
    // rate and the panel: a short measure, one process busy.
    if (r.cancel.cancelled()) return cancelled(r);
    progress(99, "Measuring preprocess on the class's examples");
    // A measure that fails leaves the figure unknown; the model still loads.
    ProfileResult pre;
    const Status measured = profile_preprocess(*model, 1, 0.3, nullptr, pre);
    if (measured && !pre.preprocess_pool_us.empty() && !pre.preprocess_pool_us[0].empty()) {
      const std::vector<double>& q = pre.preprocess_pool_us[0];
      m.preprocess_us = q[q.size() / 2];
    }
  }
  if (std::string(model->runtime()) == "Python") {
    m.runtime = "Python";
    m.blas = "the handler's own, in a worker process per lane (" + choice.python.interpreter + ")";
    m.threads = "OMP/BLAS threads per worker: " + std::to_string(po.blas_threads) + " · " +
                lanes_text(lanes);
  } else {
    m.blas = prof->blas + " · LibTorch " + torch_info().torch_version;
    m.threads = "intra-op " + std::to_string(prof->intra_op_threads) + " · inter-op " +
                std::to_string(prof->inter_op_threads) + " · BLAS " +
                std::to_string(prof->blas_threads) + " per lane · " + lanes_text(lanes);
  }
  progress(100, "Ready");
  return m;
}

#endif

// The kept cost of the model on this machine, where there is one.
void read_kept_cost(LoadedModel& m) {
  ModelChoice choice;
  if (m.synthetic) {
    choice.synthetic = m.synthetic;
  } else {
    choice.path = m.path;
    choice.device = m.device;
  }
  auto key = cost_key_for(choice);
  const std::string dir = cost_cache_dir();
  if (!key || dir.empty()) return;
  m.cost_key = *key;
  auto kept = read_cached_cost(cost_cache_path(*key, dir), *key);
  if (!kept) {
    m.kept_note = kept.error().message;
  } else if (*kept) {
    m.kept = std::move(**kept);
  }
}

Expected<LoadedModel> load_model(const ModelRequest& r, const LoadProgress& progress,
                                 int blas_threads) {
  Expected<LoadedModel> m = invalid_argument("no model");
  if (is_synthetic(r.path)) {
    m = load_synthetic(r, progress);
  } else {
#ifdef BATCHSCOPE_WITH_TORCH
    ModelRequest found = r;
    found.path = find_model(r.path);  // "models/mlp.pt" saved by a build tree, "mlp"
    m = load_torch(found, progress, blas_threads);
#else
    (void)blas_threads;
    return invalid_argument("this build has no LibTorch, so it cannot load " + r.path +
                            "; choose the synthetic model");
#endif
  }
  if (m) read_kept_cost(*m);
  return m;
}

}  // namespace

ModelLoader make_model_loader(int blas_threads) {
  return [blas_threads](const ModelRequest& r, const LoadProgress& progress) {
    const LoadProgress quiet = [](int, const std::string&) {};
    return load_model(r, progress ? progress : quiet, blas_threads);
  };
}

ModelDescriber make_model_describer() {
  ModelDescriber d;
#ifdef BATCHSCOPE_WITH_TORCH
  d.arguments =
      [](const std::string& path) -> Expected<std::vector<std::pair<std::string, std::string>>> {
    auto args = forward_arguments(path);
    if (!args) return args.error();
    std::vector<std::pair<std::string, std::string>> out;
    for (const ForwardArgument& a : *args) {
      if (a.has_default) break;
      out.emplace_back(a.name, a.type);
    }
    return out;
  };
  d.write = [](const std::string& path, const std::vector<TensorSpec>& inputs,
               uint32_t max_batch) -> Expected<std::string> {
    auto m = describe_model({.model_path = path,
                             .inputs = inputs,
                             .max_batch_size = max_batch,
                             .name = {},
                             .description = {}});
    if (!m) return m.error();
    return write_sidecar(path, *m);
  };
#endif
  return d;
}

}  // namespace batchscope
