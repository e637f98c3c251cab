// SPDX-License-Identifier: GPL-3.0-or-later
// A Python file: its class runs in worker processes, one per lane
// (python/python_runner.h). Opening it imports the file once in a worker to
// read what the class declares; the answer is kept for the process's life
// per file (and its modification time), class and interpreter, since every
// command opens its model more than once.
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>

#include "model/model_kinds.h"
#include "python/preprocess_pool.h"

namespace batchscope {
namespace {

const std::string kPythonDevice = "cpu";

class PythonModel final : public ModelKindImpl {
 public:
  PythonModel(PythonSpec spec, PythonHandler handler)
      : spec_(std::move(spec)), handler_(std::move(handler)) {}
  ModelKind kind() const override { return ModelKind::kTensor; }
  const char* runtime() const override { return "Python"; }
  const std::string& name() const override { return handler_.metadata.name; }
  const std::string& device() const override { return kPythonDevice; }
  const ModelMetadata& metadata() const override { return handler_.metadata; }
  const ModelMetadata& lane_metadata() const override { return handler_.model; }
  const PythonHandler* python_handler() const override { return &handler_; }
  const LmInfo& lm_info() const override { return none_; }
  Expected<RunnerFactory> runners(const Options& options, const LoadHooks& hooks) const override {
    WorkerSetup w = setup(options);
    w.threads = hooks.blas_threads;
    if (hooks.workers) w.counts = hooks.workers;
    return python_runner_factory(std::move(w));
  }
  StageMaker prepare_stage(const Options& options,
                           std::shared_ptr<WorkerCounts> counts) const override {
    if (!handler_.has_preprocess) return {};
    WorkerSetup w = setup(options);
    w.counts = counts ? std::move(counts) : std::make_shared<WorkerCounts>();
    return [w] { return std::make_shared<PreprocessPool>(w); };
  }
  Expected<LmSetup> lm(int) const override { return invalid_argument("not a language model"); }

 private:
  WorkerSetup setup(const Options& options) const {
    WorkerSetup w;
    w.spec = spec_;
    w.metadata = handler_.model;
    w.served = handler_.metadata;
    w.has_preprocess = handler_.has_preprocess;
    w.has_postprocess = handler_.has_postprocess;
    w.warm_batch = options.max_batch_size;
    w.lanes = static_cast<int>(options.num_lanes);
    return w;
  }

  PythonSpec spec_;
  PythonHandler handler_;
  LmInfo none_;
};

using DescribeKey = std::tuple<std::string, int64_t, std::string, std::string>;

Expected<PythonHandler> described(const PythonSpec& spec) {
  static std::mutex mu;
  static std::map<DescribeKey, PythonHandler> seen;
  std::error_code time_ec, path_ec;
  const auto mtime = std::filesystem::last_write_time(spec.file, time_ec);
  const DescribeKey key{std::filesystem::absolute(spec.file, path_ec).string(),
                        time_ec ? 0 : static_cast<int64_t>(mtime.time_since_epoch().count()),
                        spec.class_name, spec.python};
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = seen.find(key); it != seen.end()) return it->second;
  }
  auto h = describe_python(spec);
  if (!h) return h.error();
  std::lock_guard<std::mutex> g(mu);
  seen[key] = *h;
  return h;
}

}  // namespace

Expected<std::shared_ptr<const ModelKindImpl>> open_python(const ModelChoice& choice) {
  PythonSpec spec;
  spec.file = choice.path;
  spec.class_name = choice.python.class_name;
  spec.python = choice.python.interpreter;
  spec.options = choice.python.options;
  spec.worker_timeout_ms = choice.python.worker_timeout_ms;
  auto handler = described(spec);
  if (!handler) return handler.error();
  return std::shared_ptr<const ModelKindImpl>(
      std::make_shared<PythonModel>(std::move(spec), std::move(*handler)));
}

}  // namespace batchscope
