// SPDX-License-Identifier: GPL-3.0-or-later
// Torch first: LibTorch uses the identifier `slots`, which Qt defines as a
// macro (this target never includes Qt).
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>
#ifdef BATCHSCOPE_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "torch/torch_model.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include "common/metadata_json.h"
#include "common/padding.h"
#include "torch/describe.h"
#include "torch/scalar_types.h"
#include "torch/torch_threads.h"

namespace batchscope {

namespace {

Error load_cancelled(const std::string& model_path) {
  return Error{ErrorCode::kCancelled, "loading " + model_path + " was cancelled"};
}

std::string shape_of(const at::Tensor& t) {
  return shape_string(Shape(t.sizes().begin(), t.sizes().end()));
}

std::atomic<uint64_t> next_serial{1};

// A request of zeros for the dry run and the warm-up: variable dimensions
// at their largest (the costliest shape a batch takes; 256 where unbounded).
Tensors zeros_at_longest(const ModelMetadata& meta) {
  Tensors zeros;
  for (const TensorSpec& spec : meta.inputs) {
    Tensor t(spec.dtype, spec.sample_item_shape(256));
    std::memset(t.data(), 0, t.nbytes());
    zeros.push_back(std::move(t));
  }
  return zeros;
}

}  // namespace

struct TorchModel::Impl {
  ModelMetadata meta;
  torch::jit::Module module;
  torch::Device device{torch::kCPU};
  std::string device_name = "cpu";
  TorchThreadCounts threads;
  bool cuda = false;
  uint32_t warmup_top = 1;
  bool warmup_every_size = false;
  // Tells the threads that warmed this model (a thread id may be reused by
  // a later thread, whose PyTorch state starts empty).
  const uint64_t serial = next_serial.fetch_add(1);
#ifdef BATCHSCOPE_CUDA
  // A GPU model runs on a stream of its own, so lanes sharing one device
  // overlap their copies and kernels, and each waits for its own work only.
  std::optional<c10::cuda::CUDAStream> stream;
#endif

  void configure_thread() const { configure_torch_thread(threads); }

  // Waits for this model's work on the GPU: its stream's, or the device's
  // where streams are not built in.
  void wait_for_device() const {
#ifdef BATCHSCOPE_CUDA
    if (stream) {
      stream->synchronize();
      return;
    }
#endif
    torch::cuda::synchronize(device.index());
  }

  at::Tensor stack(std::span<Tensors> reqs, size_t k) const {
    const TensorSpec& spec = meta.inputs[k];
    if (spec.variable()) return stack_padded(reqs, k);
    std::vector<int64_t> shape{static_cast<int64_t>(reqs.size())};
    for (int64_t d : spec.item_shape()) shape.push_back(d);
    auto opts = at::TensorOptions().dtype(scalar_type(spec.dtype)).pinned_memory(cuda);
    at::Tensor batch = at::empty(shape, opts);
    const size_t item = static_cast<size_t>(spec.item_numel()) * dtype_size(spec.dtype);
    auto* dst = static_cast<std::byte*>(batch.data_ptr());
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i].size() != meta.inputs.size() || reqs[i][k].nbytes() != item ||
          reqs[i][k].dtype() != spec.dtype) {
        throw std::invalid_argument("request " + std::to_string(i) +
                                    " of the batch does not fit input '" + spec.name + "' " +
                                    shape_string(spec.item_shape()));
      }
      std::memcpy(dst + i * item, reqs[i][k].data(), item);
    }
    return cuda ? batch.to(device, /*non_blocking=*/true) : batch;
  }

  // A variable input: each request copied into the corner of a batch as
  // long as its longest request in each dimension, the rest pad_value.
  at::Tensor stack_padded(std::span<Tensors> reqs, size_t k) const {
    const TensorSpec& spec = meta.inputs[k];
    const Shape want = spec.item_shape();
    Shape longest(want.size(), 0);
    bool ragged = false;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const Shape* s = reqs[i].size() == meta.inputs.size() ? &reqs[i][k].shape() : nullptr;
      bool fits = s && reqs[i][k].dtype() == spec.dtype && s->size() == want.size();
      for (size_t d = 0; fits && d < want.size(); ++d)
        fits = want[d] >= 0 ? (*s)[d] == want[d] : (*s)[d] >= 1;
      if (!fits) {
        throw std::invalid_argument("request " + std::to_string(i) +
                                    " of the batch does not fit input '" + spec.name + "' " +
                                    shape_string(want));
      }
      for (size_t d = 0; d < want.size(); ++d) {
        if (i > 0 && (*s)[d] != longest[d]) ragged = true;
        longest[d] = std::max(longest[d], (*s)[d]);
      }
    }
    std::vector<int64_t> shape{static_cast<int64_t>(reqs.size())};
    shape.insert(shape.end(), longest.begin(), longest.end());
    auto opts = at::TensorOptions().dtype(scalar_type(spec.dtype)).pinned_memory(cuda);
    at::Tensor batch = at::empty(shape, opts);
    if (ragged) batch.fill_(spec.pad_value);
    int64_t item_numel = 1;
    for (int64_t d : longest) item_numel *= d;
    const size_t elem = dtype_size(spec.dtype);
    const size_t item = static_cast<size_t>(item_numel) * elem;
    auto* dst = static_cast<std::byte*>(batch.data_ptr());
    for (size_t i = 0; i < reqs.size(); ++i) {
      const Tensor& t = reqs[i][k];
      if (t.shape() == longest) {
        std::memcpy(dst + i * item, t.data(), item);
      } else {
        copy_block(dst + i * item, longest, t.data(), t.shape(), t.shape(), elem);
      }
    }
    return cuda ? batch.to(device, /*non_blocking=*/true) : batch;
  }

  // The module's result as one tensor per declared output, in order.
  std::vector<at::Tensor> outputs_of(const c10::IValue& v) const {
    std::vector<at::Tensor> out;
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    } else if (v.isGenericDict()) {
      auto dict = v.toGenericDict();
      for (const TensorSpec& spec : meta.outputs) {
        auto it = dict.find(spec.name);
        if (it == dict.end()) {
          throw std::runtime_error("the model's output dict has no '" + spec.name + "'");
        }
        out.push_back(it->value().toTensor());
      }
    } else {
      throw std::runtime_error("the model returned " + v.tagKind() +
                               "; expected a tensor, a tuple or a dict of tensors");
    }
    if (out.size() != meta.outputs.size()) {
      throw std::runtime_error("the model returned " + std::to_string(out.size()) +
                               " outputs; its metadata declares " +
                               std::to_string(meta.outputs.size()));
    }
    return out;
  }

  std::vector<at::Tensor> forward(std::span<Tensors> reqs) {
    c10::InferenceMode guard;
#ifdef BATCHSCOPE_CUDA
    std::optional<c10::cuda::CUDAStreamGuard> on_stream;
    if (stream) on_stream.emplace(*stream);
#endif
    std::vector<c10::IValue> args;
    for (size_t k = 0; k < meta.inputs.size(); ++k) args.emplace_back(stack(reqs, k));
    std::vector<at::Tensor> outs = outputs_of(module.forward(std::move(args)));
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorSpec& spec = meta.outputs[k];
      at::Tensor& t = outs[k];
      if (t.scalar_type() != scalar_type(spec.dtype)) {
        throw std::runtime_error("output '" + spec.name + "' has datatype " +
                                 std::string(c10::toString(t.scalar_type())) +
                                 ", the metadata says " + dtype_name(spec.dtype));
      }
      std::vector<int64_t> want{static_cast<int64_t>(reqs.size())};
      for (int64_t d : spec.item_shape()) want.push_back(d);
      bool fits = t.dim() == static_cast<int64_t>(want.size());
      for (size_t d = 0; fits && d < want.size(); ++d) fits = want[d] < 0 || t.size(d) == want[d];
      if (!fits) {
        throw std::runtime_error("output '" + spec.name + "' has shape " + shape_of(t) +
                                 " for a batch of " + std::to_string(reqs.size()) +
                                 ", the metadata says " + shape_string(spec.shape));
      }
      t = cuda ? t.to(torch::kCPU, /*non_blocking=*/true) : t.contiguous();
    }
    if (cuda) {
      wait_for_device();
      for (at::Tensor& t : outs) t = t.contiguous();
    }
    return outs;
  }

  // One result per request. A variable output dimension that came back as
  // long as the batch's padded length is cut to each request's own length
  // (request_length(): its first variable input dimension).
  std::vector<Tensors> split(const std::vector<at::Tensor>& outs,
                             std::span<const Tensors> reqs) const {
    const size_t n = reqs.size();
    std::vector<Tensors> per(n);
    std::vector<int64_t> lengths;
    int64_t padded = 0;
    for (const Tensors& r : reqs) {
      lengths.push_back(request_length(meta, r));
      padded = std::max(padded, lengths.back());
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorSpec& spec = meta.outputs[k];
      const auto* src = static_cast<const std::byte*>(outs[k].data_ptr());
      if (!spec.variable()) {
        const size_t item = static_cast<size_t>(spec.item_numel()) * dtype_size(spec.dtype);
        for (size_t i = 0; i < n; ++i) {
          Tensor t(spec.dtype, spec.item_shape());
          std::memcpy(t.data(), src + i * item, item);
          per[i].push_back(std::move(t));
        }
        continue;
      }
      const Shape got(outs[k].sizes().begin() + 1, outs[k].sizes().end());
      int64_t numel = 1;
      for (int64_t d : got) numel *= d;
      const size_t elem = dtype_size(spec.dtype);
      const size_t item = static_cast<size_t>(numel) * elem;
      const Shape declared = spec.item_shape();
      for (size_t i = 0; i < n; ++i) {
        Shape own = got;
        for (size_t d = 0; d < own.size(); ++d) {
          if (declared[d] < 0 && padded > 0 && own[d] == padded) own[d] = lengths[i];
        }
        Tensor t(spec.dtype, own);
        if (own == got) {
          std::memcpy(t.data(), src + i * item, item);
        } else {
          copy_block(t.data(), own, src + i * item, got, own, elem);
        }
        per[i].push_back(std::move(t));
      }
    }
    return per;
  }
};

TorchModel::TorchModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchModel::~TorchModel() = default;

const ModelMetadata& TorchModel::metadata() const { return impl_->meta; }
const std::string& TorchModel::device() const { return impl_->device_name; }
int TorchModel::intra_op_threads() const { return impl_->threads.intra_op; }
int TorchModel::blas_threads() const { return impl_->threads.blas; }
int TorchModel::inter_op_threads() const { return at::get_num_interop_threads(); }

Expected<std::vector<Tensors>> TorchModel::run(std::span<Tensors> inputs) {
  if (inputs.empty()) return std::vector<Tensors>{};
  impl_->configure_thread();
  try {
    return impl_->split(impl_->forward(inputs), inputs);
  } catch (const std::exception& e) {
    return Error{ErrorCode::kModelError,
                 "model '" + impl_->meta.name + "' failed: " + torch_error_message(e)};
  }
}

std::vector<std::string> available_devices() {
  std::vector<std::string> d{"cpu"};
  if (torch::cuda::is_available()) {
    for (size_t i = 0; i < static_cast<size_t>(torch::cuda::device_count()); ++i)
      d.push_back("cuda:" + std::to_string(i));
  }
  return d;
}

Expected<std::unique_ptr<TorchModel>> TorchModel::load(const std::string& model_path,
                                                       const TorchOptions& options) {
  auto meta = load_model_metadata(model_path);
  if (!meta) return meta.error();
  auto impl = std::make_unique<Impl>();
  impl->meta = std::move(*meta);

  const auto devices = available_devices();
  if (std::find(devices.begin(), devices.end(), options.device) == devices.end()) {
    std::string have;
    for (const auto& d : devices) have += (have.empty() ? "" : ", ") + d;
    return invalid_argument("device '" + options.device +
                            "' is not available; this LibTorch offers " + have);
  }
  impl->device_name = options.device;
  impl->device = torch::Device(options.device);
  impl->cuda = impl->device.is_cuda();
  impl->threads = torch_thread_counts(options);
  set_inter_op_threads_once(std::max(1, options.inter_op_threads));
  impl->configure_thread();

  const auto cancelled = [&options] { return options.cancelled && options.cancelled(); };
  if (cancelled()) return load_cancelled(model_path);
  try {
    impl->module = torch::jit::load(model_path, impl->device);
    impl->module.eval();
#ifdef BATCHSCOPE_CUDA
    if (impl->cuda) {
      torch::cuda::synchronize(impl->device.index());  // the weights are on the device
      impl->stream = c10::cuda::getStreamFromPool(false, impl->device.index());
    }
#endif
  } catch (const std::exception& e) {
    return Error{ErrorCode::kModelError,
                 "cannot load the TorchScript model " + model_path + ": " + torch_error_message(e)};
  }

  auto model = std::unique_ptr<TorchModel>(new TorchModel(std::move(impl)));
  // Dry run on zeros, which nearly every model accepts: the module must
  // agree with its metadata before it serves.
  const uint32_t max_batch = model->metadata().max_batch_size;
  Tensors zeros = zeros_at_longest(model->metadata());
  std::vector<Tensors> batch(std::min<uint32_t>(2, max_batch), zeros);
  try {
    model->impl_->forward(batch);
  } catch (const std::exception& e) {
    return invalid_argument(model_path + " does not match " + sidecar_path(model_path) +
                            " (dry run on a batch of zeros): " + torch_error_message(e));
  }
  // Warm up over the sizes it will see, so first requests pay nothing extra.
  model->impl_->warmup_top =
      options.warmup_max_batch > 0 ? std::min(options.warmup_max_batch, max_batch) : max_batch;
  model->impl_->warmup_every_size = options.warmup_every_size;
  if (Status s = model->warm_up_here(options.on_warmup, cancelled); !s) {
    return s.error().code == ErrorCode::kCancelled ? load_cancelled(model_path) : s.error();
  }
  return model;
}

Status TorchModel::warm_up_here(const std::function<void(uint32_t, uint32_t)>& on_size,
                                const std::function<bool()>& cancelled) {
  thread_local std::set<uint64_t> warmed;  // the models this thread has warmed
  if (warmed.count(impl_->serial)) return Status::Ok();
  Tensors zeros = zeros_at_longest(impl_->meta);
  std::vector<Tensors> batch;
  const uint32_t top = impl_->warmup_top;
  for (uint32_t b = 1;; b = std::min(impl_->warmup_every_size ? b + 1 : b * 2, top)) {
    if (cancelled && cancelled()) return Error{ErrorCode::kCancelled, "warm-up cancelled"};
    batch.resize(b, zeros);
    if (auto r = run(batch); !r) return r.error();
    if (on_size) on_size(b, top);
    if (b == top) break;
  }
  warmed.insert(impl_->serial);
  return Status::Ok();
}

namespace {

class TorchRunner final : public Runner {
 public:
  explicit TorchRunner(std::unique_ptr<TorchModel> m) : model_(std::move(m)) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    return model_->run(inputs);
  }
  // The lane's thread is not the one that loaded the model.
  Status prepare() override { return model_->warm_up_here(); }

 private:
  std::unique_ptr<TorchModel> model_;
};

}  // namespace

RunnerFactory torch_runner_factory(std::string model_path, TorchOptions options) {
  return [path = std::move(model_path), options](int) -> std::unique_ptr<Runner> {
    auto model = TorchModel::load(path, options);
    if (!model) throw std::runtime_error(model.error().message);
    return std::make_unique<TorchRunner>(std::move(*model));
  };
}

}  // namespace batchscope
