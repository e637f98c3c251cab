// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "runs/histogram.h"
#include "runs/machine_load.h"
#include "torch/settle.h"
#include "torch/torch_info.h"
#include "torch/torch_model.h"

namespace batchscope {

LineFit fit_line(const std::vector<ProfilePoint>& points) {
  const double n = static_cast<double>(points.size());
  if (points.empty()) return {};
  double sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const ProfilePoint& p : points) {
    const double b = p.batch;
    sb += b;
    st += p.median_us;
    sbb += b * b;
    sbt += b * p.median_us;
  }
  const double var = n * sbb - sb * sb;
  if (points.size() < 2 || var <= 0) return {0, st / std::max(sb, 1.0)};
  LineFit f;
  f.c = (n * sbt - sb * st) / var;
  f.a = (st - f.c * sb) / n;
  return f;
}

std::string unsettled_text(const std::vector<ProfilePoint>& points) {
  std::string sizes, why;
  for (const ProfilePoint& p : points) {
    if (p.settled) continue;
    sizes += (sizes.empty() ? "b = " : ", ") + std::to_string(p.batch);
    if (why.empty()) why = p.why;
  }
  return sizes.empty() ? "" : sizes + ": " + why;
}

namespace {

using Wall = std::chrono::steady_clock;

// Median, spread and count of run times in microseconds (sorted here).
ProfilePoint point_of(uint32_t batch, std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  ProfilePoint p;
  p.batch = batch;
  p.median_us = us[us.size() / 2];
  // The uniform jitter of the same p10..p90 width: a uniform spread of
  // +-s covers 1.6 s of the median between its 10th and 90th percentiles.
  const double p10 = us[us.size() / 10], p90 = us[us.size() * 9 / 10];
  p.spread = p.median_us > 0 ? std::clamp((p90 - p10) / (1.6 * p.median_us), 0.0, 0.95) : 0.0;
  p.per_item_us = p.median_us / batch;
  p.runs = static_cast<int>(us.size());
  p.measured_us = p.median_us;
  if (p.median_us > 0) {
    p.run_quantiles = even_quantiles(us);
    for (double& q : p.run_quantiles) q /= p.median_us;
  }
  return p;
}

// t(b) of each of `models` running batches of b at once, each on its own
// thread, for the sizes `single` measured alone.
Expected<LanesProfile> profile_lanes(std::vector<std::unique_ptr<Runner>>& models,
                                     const std::vector<ProfilePoint>& single,
                                     const std::vector<Tensors>& inputs, const ProfileOptions& o) {
  LanesProfile lp;
  lp.lanes = static_cast<uint32_t>(models.size());
  for (const ProfilePoint& alone : single) {
    const uint32_t b = alone.batch;
    std::vector<std::vector<double>> us(models.size());
    std::vector<std::string> errors(models.size());
    std::latch ready(static_cast<std::ptrdiff_t>(models.size()) + 1);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    Wall::time_point until;
    for (size_t i = 0; i < models.size(); ++i) {
      threads.emplace_back([&, i] {
        std::vector<Tensors> own(inputs.begin(), inputs.begin() + b);
        ready.count_down();
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        while (static_cast<int>(us[i].size()) < o.max_runs &&
               (static_cast<int>(us[i].size()) < o.min_runs || Wall::now() < until)) {
          const auto t0 = Wall::now();
          auto out = models[i]->run(own);  // the profile's runners leave their inputs be
          const auto t1 = Wall::now();
          if (!out) {
            errors[i] = out.error().message;
            return;
          }
          us[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
      });
    }
    ready.arrive_and_wait();
    until = Wall::now() + std::chrono::duration_cast<Wall::duration>(
                              std::chrono::duration<double>(o.seconds_per_point));
    go.store(true, std::memory_order_release);
    for (std::thread& t : threads) t.join();
    std::vector<double> all;
    for (size_t i = 0; i < models.size(); ++i) {
      if (!errors[i].empty()) return Error{ErrorCode::kModelError, errors[i]};
      all.insert(all.end(), us[i].begin(), us[i].end());
    }
    ProfilePoint p = point_of(b, all);
    // All lanes' batches per second over one lane's alone.
    p.speedup = p.median_us > 0 ? lp.lanes * alone.median_us / p.median_us : 0.0;
    lp.points.push_back(p);
    if (o.cancelled && o.cancelled()) {
      return Error{ErrorCode::kCancelled, "profiling lanes was cancelled"};
    }
  }
  return lp;
}

// The longest the first variable dimension may be (256 where none is declared).
uint32_t largest_length(const ModelMetadata& meta) {
  for (const TensorSpec& t : meta.inputs) {
    const Shape item = t.item_shape();
    for (size_t d = 0; d < item.size(); ++d) {
      if (item[d] >= 0) continue;
      const int64_t top = t.item_max(d);
      return static_cast<uint32_t>(std::clamp<int64_t>(top > 0 ? top : 256, 1, UINT32_MAX));
    }
  }
  return 256;
}

// t(b, L) at every size of r.points and each grid length; the reference
// length's row is t(b) as measured. Where a step between two lengths grows
// a batch's time more than twice as fast as the square of the length (a
// cliff: on a 2-core machine text_classifier's batches ran 7 times slower
// per token once the attention outgrew 4 MB), the step is halved and the
// middle length measured too, up to three times, so that a cliff is found
// within an eighth of the step rather than drawn as a slope across it.
Status measure_length_grid(Runner& model, const ModelMetadata& meta,
                           const std::vector<Tensors>& inputs, const SettleOptions& so,
                           const SettleClocks& clocks, const ProfileOptions& o, ProfileResult& r) {
  const uint32_t largest = largest_length(meta);
  const uint32_t reference = request_length(meta, inputs.front());
  std::vector<uint32_t> lengths = o.lengths;
  if (lengths.empty()) {
    lengths = default_grid_lengths(largest, reference);
  } else {
    for (uint32_t& l : lengths) l = std::clamp<uint32_t>(l, 1, largest);
    lengths.push_back(reference);
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  }
  std::map<uint32_t, std::vector<double>> columns;  // by length: a time per size
  std::vector<Tensors> at;
  // A run of a large padded batch can take a second or more: three windows
  // of one run at least each, settled or not (the grid is read for its
  // steps, which are far larger than a window's noise).
  SettleOptions each = so;
  each.min_runs = 1;
  each.max_windows = so.windows_to_agree;
  const auto measure = [&](uint32_t length) -> Status {
    std::vector<double>& column = columns[length];
    for (const ProfilePoint& p : r.points) {
      if (length == reference) {
        column.push_back(p.measured_us);
        continue;
      }
      at.clear();
      for (uint32_t i = 0; i < p.batch; ++i) at.push_back(random_inputs(meta, i + 1, length));
      auto once = [&]() -> Status {
        auto out = model.run(std::span<Tensors>(at));
        return out ? Status::Ok() : Status(out.error());
      };
      auto got = settle(once, each, clocks, o.cancelled);
      if (!got && got.error().code == ErrorCode::kCancelled) {
        return Error{ErrorCode::kCancelled, "profiling t(b, L) was cancelled"};
      }
      if (!got) return got.error();
      column.push_back(point_of(p.batch, got->us).median_us);
      if (o.on_grid_point) o.on_grid_point(p.batch, length, column.back());
    }
    return Status::Ok();
  };
  for (uint32_t length : lengths) {
    if (Status s = measure(length); !s) return s;
  }
  for (int round = 0; round < o.cliff_rounds; ++round) {
    const std::vector<uint32_t> middles = cliff_middles(columns);
    if (middles.empty()) break;
    for (uint32_t length : middles) {
      if (Status s = measure(length); !s) return s;
    }
  }
  r.reference_length = reference;
  r.grid_lengths.clear();
  r.grid_us.assign(r.points.size() * columns.size(), 0.0);
  for (const auto& [length, column] : columns) {
    const size_t c = r.grid_lengths.size();
    r.grid_lengths.push_back(length);
    for (size_t row = 0; row < column.size(); ++row)
      r.grid_us[row * columns.size() + c] = column[row];
  }
  return Status::Ok();
}

}  // namespace

std::vector<uint32_t> default_grid_lengths(uint32_t largest, uint32_t reference) {
  std::vector<uint32_t> out;
  for (uint32_t l = 16; l < largest && l <= UINT32_MAX / 2; l *= 2) out.push_back(l);
  out.push_back(std::max<uint32_t>(largest, 1));
  if (reference > 0) out.push_back(reference);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint32_t> cliff_middles(const std::map<uint32_t, std::vector<double>>& columns) {
  std::vector<uint32_t> middles;
  if (columns.size() < 2) return middles;
  for (auto hi = std::next(columns.begin()); hi != columns.end(); ++hi) {
    const auto lo = std::prev(hi);
    if (hi->first - lo->first < 8) continue;
    const double grown = static_cast<double>(hi->first) / lo->first;
    const size_t rows = std::min(lo->second.size(), hi->second.size());
    for (size_t row = 0; row < rows; ++row) {
      if (lo->second[row] > 0 && hi->second[row] > 2 * grown * grown * lo->second[row]) {
        middles.push_back(lo->first + (hi->first - lo->first) / 2);
        break;
      }
    }
  }
  return middles;
}

namespace {

// A TorchScript model as a lane's runner, for profile_runners.
class TorchModelRunner final : public Runner {
 public:
  explicit TorchModelRunner(std::unique_ptr<TorchModel> m) : model_(std::move(m)) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    return model_->run(inputs);
  }

 private:
  std::unique_ptr<TorchModel> model_;
};

}  // namespace

Expected<ProfileResult> profile_model(const std::string& model_path, const ProfileOptions& o) {
  TorchOptions to;
  to.device = o.device;
  to.intra_op_threads = o.intra_op_threads;
  to.blas_threads = o.blas_threads;
  to.warmup_max_batch = o.max_batch;
  to.cancelled = o.cancelled;
  auto loaded = TorchModel::load(model_path, to);
  if (!loaded) return loaded.error();
  ProfileSubject s;
  s.metadata = (*loaded)->metadata();
  s.device = (*loaded)->device();
  s.what = model_path;
  s.intra_op_threads = (*loaded)->intra_op_threads();
  s.blas_threads = (*loaded)->blas_threads();
  s.inter_op_threads = (*loaded)->inter_op_threads();
  const TorchInfo info = torch_info();
  s.blas = info.blas_name;
  s.blas_library = info.blas_library;
  auto first = std::make_shared<std::unique_ptr<TorchModel>>(std::move(*loaded));
  const uint32_t top = o.max_batch > 0 ? o.max_batch : s.metadata.max_batch_size;
  s.lane = [first, to, top, model_path](uint32_t lanes,
                                        uint32_t lane) -> Expected<std::unique_ptr<Runner>> {
    if (lanes == 1 && lane == 0 && *first) {
      return std::unique_ptr<Runner>(std::make_unique<TorchModelRunner>(std::move(*first)));
    }
    TorchOptions each = to;
    each.lanes = static_cast<int>(lanes);
    each.warmup_max_batch = top;
    auto m = TorchModel::load(model_path, each);
    if (!m) return m.error();
    return std::unique_ptr<Runner>(std::make_unique<TorchModelRunner>(std::move(*m)));
  };
  return profile_runners(s, o);
}

Expected<ProfileResult> profile_runners(const ProfileSubject& s, const ProfileOptions& o) {
  auto made = s.lane(1, 0);
  if (!made) return made.error();
  Runner& model = **made;
  const ModelMetadata& meta = s.metadata;
  const std::string& model_path = s.what;
  const uint32_t top = o.max_batch > 0 ? o.max_batch : meta.max_batch_size;
  if (top > meta.max_batch_size) {
    return invalid_argument("--max-batch " + std::to_string(top) + " is above the model's " +
                            "max_batch_size " + std::to_string(meta.max_batch_size));
  }

  ProfileResult r;
  r.model = meta.name;
  r.device = s.device;
  std::vector<Tensors> inputs;
  // A GPU run's thread waits on the device, so its CPU share says nothing.
  const bool on_gpu = r.device.rfind("cuda", 0) == 0;
  SettleOptions so;
  so.windows_to_agree = 3;
  so.window_seconds = o.seconds_per_point / so.windows_to_agree;
  so.min_runs = std::max(1, (o.min_runs + so.windows_to_agree - 1) / so.windows_to_agree);
  so.max_runs = std::max(1, o.max_runs / so.windows_to_agree);
  so.max_windows = std::max(so.windows_to_agree, o.max_windows);
  so.min_cpu_share = on_gpu || s.runs_elsewhere ? 0.0 : 0.5;
  const SettleClocks clocks = SettleClocks::real();
  for (uint32_t b = 1;; b = std::min(b * 2, top)) {
    while (inputs.size() < b) inputs.push_back(random_inputs(meta, inputs.size() + 1));
    std::span<Tensors> batch(inputs.data(), b);
    auto once = [&]() -> Status {
      auto out = model.run(batch);
      return out ? Status::Ok() : Status(out.error());
    };
    const LoadWatch others("/proc", !s.runs_elsewhere);
    auto got = settle(once, so, clocks, o.cancelled);
    if (!got && got.error().code == ErrorCode::kCancelled) {
      return Error{ErrorCode::kCancelled, "profiling " + model_path + " was cancelled"};
    }
    if (!got) return got.error();
    ProfilePoint p = point_of(b, got->us);
    p.settled = got->settled;
    p.windows = got->windows;
    p.cpu_share = got->cpu_share;
    p.window_gap = got->window_gap;
    p.why = got->why;
    if (const CompetingLoad load = others.load(); load.busy()) {
      if (!p.settled) p.why += "; " + load.describe();
      if (load.cores > r.competing_cores) {
        r.competing_cores = load.cores;
        r.competing = load.describe() + " (while b = " + std::to_string(b) + " was measured)";
      }
    }
    p.speedup = r.points.empty() ? 1.0 : r.points.front().per_item_us / p.per_item_us;
    r.points.push_back(p);
    if (o.on_point) o.on_point(p);
    if (b == top) break;
  }
  std::vector<double> measured;
  for (const ProfilePoint& p : r.points) measured.push_back(p.measured_us);
  const std::vector<double> fitted = monotone_fit(measured);
  for (size_t i = 0; i < r.points.size(); ++i) {
    ProfilePoint& p = r.points[i];
    p.median_us = fitted[i];
    p.per_item_us = p.median_us / p.batch;
    p.speedup = p.per_item_us > 0 ? r.points.front().per_item_us / p.per_item_us : 0.0;
    // The jitter's shape stays that of the runs, about the fitted median.
    for (double& q : p.run_quantiles) q *= p.measured_us / std::max(p.median_us, 1e-9);
  }
  if (o.length_grid && has_variable_inputs(meta)) {
    Status grid;
    std::thread lane([&] { grid = measure_length_grid(model, meta, inputs, so, clocks, o, r); });
    lane.join();
    if (!grid) return grid.error();
  }
  std::vector<ProfilePoint> settled;
  for (const ProfilePoint& p : r.points)
    if (p.settled) settled.push_back(p);
  r.settled = settled.size() == r.points.size();
  const LineFit f = settled.size() >= 2 ? fit_line(settled) : LineFit{};
  r.a_us = f.a;
  r.c_us = f.c;
  r.asymptotic_speedup = f.c > 0 && f.a > 0 ? 1.0 + f.a / f.c : 0.0;
  r.blas = s.blas;
  r.blas_library = s.blas_library;
  r.intra_op_threads = s.intra_op_threads;
  r.blas_threads = s.blas_threads;
  r.inter_op_threads = s.inter_op_threads;
  made->reset();  // the lanes below take the machine's share it had
  for (uint32_t n = 2; n <= o.lanes; ++n) {
    std::vector<std::unique_ptr<Runner>> models;
    for (uint32_t i = 0; i < n; ++i) {
      auto m = s.lane(n, i);
      if (!m) return m.error();
      models.push_back(std::move(*m));
    }
    auto lp = profile_lanes(models, r.points, inputs, o);
    if (!lp) return lp.error();
    r.lanes.push_back(std::move(*lp));
  }
  return r;
}

std::string profile_json(const ProfileResult& r) {
  nlohmann::ordered_json j;
  j["format"] = "batchscope-cost";
  j["version"] = 2;
  j["model"] = r.model;
  j["device"] = r.device;
  j["settled"] = r.settled;
  j["points"] = nlohmann::json::array();
  nlohmann::ordered_json at = nlohmann::ordered_json::object();
  for (const ProfilePoint& p : r.points) {
    nlohmann::ordered_json e = {{"batch", p.batch},
                                {"median_us", p.median_us},
                                {"measured_us", p.measured_us},
                                {"per_item_us", p.per_item_us},
                                {"speedup", p.speedup},
                                {"spread", p.spread},
                                {"runs", p.runs},
                                {"settled", p.settled},
                                {"windows", p.windows},
                                {"cpu_share", p.cpu_share},
                                {"window_gap", p.window_gap}};
    if (!p.settled) e["why"] = p.why;
    if (!p.run_quantiles.empty()) e["run_quantiles"] = p.run_quantiles;
    j["points"].push_back(e);
    at[std::to_string(p.batch)] = p.speedup;
  }
  j["a_us"] = r.a_us;
  j["c_us"] = r.c_us;
  j["asymptotic_speedup"] = r.asymptotic_speedup;
  j["speedup_at"] = at;
  j["blas"] = r.blas;
  j["blas_library"] = r.blas_library;
  j["intra_op_threads"] = r.intra_op_threads;
  j["inter_op_threads"] = r.inter_op_threads;
  j["blas_threads"] = r.blas_threads;
  if (!r.competing.empty()) {
    j["competing_cores"] = r.competing_cores;
    j["competing"] = r.competing;
  }
  if (!r.grid_lengths.empty()) {
    nlohmann::ordered_json g;
    g["reference"] = r.reference_length;
    g["batches"] = nlohmann::json::array();
    for (const ProfilePoint& p : r.points) g["batches"].push_back(p.batch);
    g["lengths"] = r.grid_lengths;
    g["median_us"] = nlohmann::json::array();
    for (size_t row = 0; row < r.points.size(); ++row) {
      const auto first =
          r.grid_us.begin() + static_cast<std::ptrdiff_t>(row * r.grid_lengths.size());
      g["median_us"].push_back(
          std::vector<double>(first, first + static_cast<std::ptrdiff_t>(r.grid_lengths.size())));
    }
    j["length_grid"] = g;
  }
  if (!r.preprocess_pool_us.empty() || !r.preprocess_lane_us.empty()) {
    nlohmann::ordered_json pre = nlohmann::ordered_json::object();
    if (!r.preprocess_lane_us.empty()) {
      pre["lane_us_quantiles"] = r.preprocess_lane_us;
      pre["lane_requests"] = r.preprocess_lane_requests;
    }
    if (!r.preprocess_pool_us.empty()) {
      pre["pool"] = nlohmann::json::array();
      for (size_t k = 0; k < r.preprocess_pool_us.size(); ++k) {
        nlohmann::ordered_json e = {{"busy", k + 1}, {"us_quantiles", r.preprocess_pool_us[k]}};
        if (k < r.preprocess_pool_requests.size()) e["requests"] = r.preprocess_pool_requests[k];
        pre["pool"].push_back(std::move(e));
      }
    }
    j["preprocess"] = pre;
  }
  if (!r.lanes.empty()) {
    j["lanes"] = nlohmann::json::array();
    for (const LanesProfile& lp : r.lanes) {
      nlohmann::ordered_json entry;
      entry["lanes"] = lp.lanes;
      entry["points"] = nlohmann::json::array();
      for (const ProfilePoint& p : lp.points) {
        entry["points"].push_back({{"batch", p.batch},
                                   {"median_us", p.median_us},
                                   {"spread", p.spread},
                                   {"runs", p.runs},
                                   {"throughput_ratio", p.speedup}});
      }
      j["lanes"].push_back(entry);
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace batchscope
