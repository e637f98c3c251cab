// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_profile.h"

#include "model/preprocess_profile.h"

#include <algorithm>
#include <thread>

namespace batchscope {
namespace {

// A lane of a model with preprocess, measured as it runs under its pool:
// every request arrives prepared (python_runner.h's mark).
class PreparedLane final : public Runner {
 public:
  explicit PreparedLane(std::unique_ptr<Runner> lane) : lane_(std::move(lane)) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    for (Tensors& r : inputs) mark_prepared(r);
    return lane_->run(inputs);
  }
  Status prepare() override { return lane_->prepare(); }
  bool needs_recovery() const override { return lane_->needs_recovery(); }
  void recover() override { lane_->recover(); }
  std::span<const Status> request_faults() const override { return lane_->request_faults(); }

 private:
  std::unique_ptr<Runner> lane_;
};

}  // namespace

Expected<ProfileResult> profile_choice(const ModelChoice& choice, const ProfileOptions& o) {
  if (!is_python_file(choice.path)) return profile_model(choice.path, o);
  auto model = LocalModel::open(choice);
  if (!model) return model.error();
  ProfileSubject s;
  // A model with preprocess: t(b) of predict (and postprocess) on prepared
  // requests, as its lanes run under the pool.
  s.metadata = model->lane_metadata();
  const bool prepared = static_cast<bool>(model->prepare_stage({}));
  s.device = model->device();
  s.what = choice.path;
  s.blas = "the handler's own (Python)";
  // The threads each worker is given (python_runner.h): the cores over the lanes.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.blas_threads = o.blas_threads > 0 ? o.blas_threads : cores;
  s.runs_elsewhere = true;
  const uint32_t top = o.max_batch > 0 ? o.max_batch : s.metadata.max_batch_size;
  s.lane = [m = *model, top, threads = o.blas_threads, prepared](
               uint32_t lanes, uint32_t lane) -> Expected<std::unique_ptr<Runner>> {
    Options options;
    options.max_batch_size = top;
    options.num_lanes = lanes;
    LoadHooks hooks;
    hooks.blas_threads = threads;
    auto factory = m.runners(options, hooks);
    if (!factory) return factory.error();
    std::unique_ptr<Runner> r = (*factory)(static_cast<int>(lane));
    if (prepared) r = std::make_unique<PreparedLane>(std::move(r));
    if (Status st = r->prepare(); !st) return st.error();
    return r;
  };
  auto r = profile_runners(s, o);
  if (!r || !prepared) return r;
  // The pool with 1 .. cores + 1 processes busy (they share the cores with
  // a lane), and a lane preparing its own batch.
  Options one;
  one.max_batch_size = top;
  LoadHooks hooks;
  hooks.blas_threads = o.blas_threads;
  auto factory = model->runners(one, hooks);
  if (!factory) return factory.error();
  std::unique_ptr<Runner> lane = (*factory)(0);
  if (Status st = lane->prepare(); !st) return st.error();
  const uint32_t most = std::clamp<uint32_t>(std::max(o.lanes, cores + 1u), 2, 8);
  if (Status st = profile_preprocess(*model, most, std::max(0.5, 3 * o.seconds_per_point),
                                     std::move(lane), *r);
      !st) {
    return st.error();
  }
  return r;
}

}  // namespace batchscope
