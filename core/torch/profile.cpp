#include "torch/profile.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

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

Expected<ProfileResult> profile_model(const std::string& model_path, const ProfileOptions& o) {
  TorchOptions to;
  to.device = o.device;
  to.intra_op_threads = o.intra_op_threads;
  to.blas_threads = o.blas_threads;
  to.warmup_max_batch = o.max_batch;
  to.cancelled = o.cancelled;
  auto loaded = TorchModel::load(model_path, to);
  if (!loaded) return loaded.error();
  TorchModel& model = **loaded;
  const ModelMetadata& meta = model.metadata();
  const uint32_t top = o.max_batch > 0 ? o.max_batch : meta.max_batch_size;
  if (top > meta.max_batch_size) {
    return invalid_argument("--max-batch " + std::to_string(top) + " is above the model's " +
                            "max_batch_size " + std::to_string(meta.max_batch_size));
  }

  ProfileResult r;
  r.model = meta.name;
  r.device = model.device();
  std::vector<Tensors> inputs;
  using Clock = std::chrono::steady_clock;
  for (uint32_t b = 1;; b = std::min(b * 2, top)) {
    while (inputs.size() < b) inputs.push_back(random_inputs(meta, inputs.size() + 1));
    std::span<Tensors> batch(inputs.data(), b);
    std::vector<double> us;
    const auto until = Clock::now() + std::chrono::duration<double>(o.seconds_per_point);
    while (static_cast<int>(us.size()) < o.max_runs &&
           (static_cast<int>(us.size()) < o.min_runs || Clock::now() < until)) {
      if (o.cancelled && o.cancelled()) {
        return Error{ErrorCode::kCancelled, "profiling " + model_path + " was cancelled"};
      }
      const auto t0 = Clock::now();
      auto out = model.run(batch);
      const auto t1 = Clock::now();
      if (!out) return out.error();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    ProfilePoint p;
    p.batch = b;
    p.median_us = us[us.size() / 2];
    // The uniform jitter of the same p10..p90 width: a uniform spread of
    // +-s covers 1.6 s of the median between its 10th and 90th percentiles.
    const double p10 = us[us.size() / 10], p90 = us[us.size() * 9 / 10];
    p.spread = p.median_us > 0 ? std::clamp((p90 - p10) / (1.6 * p.median_us), 0.0, 0.95) : 0.0;
    p.per_item_us = p.median_us / b;
    p.runs = static_cast<int>(us.size());
    p.speedup = r.points.empty() ? 1.0 : r.points.front().per_item_us / p.per_item_us;
    r.points.push_back(p);
    if (o.on_point) o.on_point(p);
    if (b == top) break;
  }
  const LineFit f = fit_line(r.points);
  r.a_us = f.a;
  r.c_us = f.c;
  r.asymptotic_speedup = f.c > 0 && f.a > 0 ? 1.0 + f.a / f.c : 0.0;
  const TorchInfo info = torch_info();
  r.blas = info.blas_name;
  r.blas_library = info.blas_library;
  r.intra_op_threads = model.intra_op_threads();
  r.blas_threads = model.blas_threads();
  r.inter_op_threads = model.inter_op_threads();
  return r;
}

std::string profile_json(const ProfileResult& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model;
  j["device"] = r.device;
  j["points"] = nlohmann::json::array();
  nlohmann::ordered_json at = nlohmann::ordered_json::object();
  for (const ProfilePoint& p : r.points) {
    j["points"].push_back({{"batch", p.batch},
                           {"median_us", p.median_us},
                           {"per_item_us", p.per_item_us},
                           {"speedup", p.speedup},
                           {"spread", p.spread},
                           {"runs", p.runs}});
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
  return j.dump(2) + "\n";
}

}  // namespace batchscope
