// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/python_runner.h"

#include <chrono>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/padding.h"
#include "python/worker_process.h"
#include "python/worker_protocol.h"

namespace batchscope {
namespace {

using namespace worker;

template <class T>
void fill_as(std::byte* dst, size_t count, double v) {
  const T value = static_cast<T>(v);
  for (size_t i = 0; i < count; ++i) std::memcpy(dst + i * sizeof(T), &value, sizeof(T));
}

void fill(std::byte* dst, size_t count, DType dtype, double v) {
  if (v == 0) {
    std::memset(dst, 0, count * dtype_size(dtype));
    return;
  }
  switch (dtype) {
    case DType::kFloat32: return fill_as<float>(dst, count, v);
    case DType::kFloat64: return fill_as<double>(dst, count, v);
    case DType::kFloat16:
      return fill_as<uint16_t>(dst, count, float_to_half(static_cast<float>(v)));
    case DType::kInt64: return fill_as<int64_t>(dst, count, v);
    case DType::kInt32: return fill_as<int32_t>(dst, count, v);
    case DType::kUInt8: return fill_as<uint8_t>(dst, count, v);
    case DType::kBool: return fill_as<uint8_t>(dst, count, v != 0 ? 1 : 0);
    case DType::kBytes: return;  // never stacked: a lane prepares BYTES inputs one by one
  }
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// The mark: no request tensor has rank 9 (the metadata allows 8).
const Shape kMarkShape(kMaxDims + 1, 0);

}  // namespace

void mark_prepared(Tensors& request) { request.emplace_back(DType::kUInt8, kMarkShape); }

bool has_prepared_mark(const Tensors& request) {
  return !request.empty() && request.back().shape() == kMarkShape;
}

bool take_prepared_mark(Tensors& request) {
  if (!has_prepared_mark(request)) return false;
  request.pop_back();
  return true;
}

Error preprocess_fault(Reply reply, std::string message) {
  return Error{reply == Reply::kRaised ? ErrorCode::kInvalidArgument : ErrorCode::kModelError,
               std::move(message)};
}

ModelMetadata answer_layout(const ModelMetadata& served) {
  ModelMetadata m;
  m.name = served.name;
  int64_t strings = 0;
  for (const TensorSpec& t : served.outputs) {
    TensorSpec w = t;
    if (t.dtype == DType::kBytes) {
      w.dtype = DType::kUInt8;
      w.shape = {-1, -1};
      w.max_shape.clear();
      ++strings;
    }
    m.outputs.push_back(std::move(w));
  }
  if (strings > 0) {
    TensorSpec lengths;
    lengths.name = "lengths";
    lengths.dtype = DType::kInt64;
    lengths.shape = {-1, strings};
    m.outputs.push_back(std::move(lengths));
  }
  return m;
}

PythonRunner::PythonRunner(WorkerSetup setup, int lane)
    : setup_(std::move(setup)),
      client_(setup_, file_name(setup_.spec.file) + " lane " + std::to_string(lane)),
      answer_(setup_.has_postprocess ? answer_layout(setup_.served) : setup_.metadata) {}

uint32_t PythonRunner::predict_flags() const {
  return setup_.has_postprocess ? uint32_t{kPost} : 0u;
}

Expected<std::vector<Tensors>> PythonRunner::run(std::span<Tensors> inputs) {
  faults_.clear();
  last_pre_ = Duration::zero();
  last_lengths_.clear();
  if (inputs.empty()) return std::vector<Tensors>{};
  if (Status s = client_.check_alive(); !s) return s.error();
  const int64_t deadline = steady_now_ms() + setup_.spec.worker_timeout_ms;
  if (setup_.has_preprocess) {
    prepared_.clear();
    for (Tensors& r : inputs) prepared_.push_back(take_prepared_mark(r));
    // A request not prepared by the pool is prepared here; those that were
    // pass through the worker's preprocess as they are.
    if (std::find(prepared_.begin(), prepared_.end(), false) != prepared_.end())
      return prepare_then_predict(inputs, deadline);
  }
  return predict(inputs, deadline);
}

Expected<std::vector<Tensors>> PythonRunner::prepare_then_predict(std::span<Tensors> reqs,
                                                                  int64_t deadline) {
  const auto began = std::chrono::steady_clock::now();
  faults_.assign(reqs.size(), Status::Ok());
  std::vector<size_t> kept;
  std::vector<int64_t> lengths;  // the kept requests' own, as the worker prepared them
  last_lengths_.assign(reqs.size(), 0);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const bool raw = !prepared_[i];
    const auto& specs = raw ? setup_.served.inputs : setup_.metadata.inputs;
    auto at = client_.write_request(reqs[i], specs, 0);
    if (!at) {
      faults_[i] = at.error();
      continue;
    }
    auto reply =
        client_.call(Command::kPreprocess, kKeep | (raw ? 0u : kPass), 1, deadline, "preprocess");
    if (!reply) return reply.error();  // the worker was lost: the batch fails
    if (*reply == Reply::kOk) {
      kept.push_back(i);
      lengths.push_back(static_cast<int64_t>(
          std::min<uint64_t>(get_u64(client_.region(), kFieldLength), INT32_MAX)));
      last_lengths_[i] = static_cast<uint32_t>(lengths.back());
    } else if (*reply == Reply::kRaised || *reply == Reply::kBadOutput) {
      faults_[i] = preprocess_fault(*reply, read_message(client_.region()));
    } else {
      return client_.lose(ErrorCode::kUnavailable,
                          "the model's worker (" + client_.label() +
                              ") answered an unknown "
                              "status " +
                              std::to_string(static_cast<uint32_t>(*reply)));
    }
  }
  last_pre_ = std::chrono::steady_clock::now() - began;
  std::vector<Tensors> per(reqs.size());
  if (kept.empty()) return per;
  const auto batch = static_cast<uint32_t>(kept.size());
  uint64_t need = kHeaderBytes;
  for (const TensorSpec& t : answer_.outputs) {
    if (!t.variable()) need = std::min(need + guess_bytes(t, batch), kTooLarge);
  }
  if (need > setup_.spec.max_region_bytes) {
    return Error{ErrorCode::kModelError, "a batch of " + std::to_string(batch) + " needs " +
                                             std::to_string(need) +
                                             " bytes of shared memory, above the worker "
                                             "region's limit of " +
                                             std::to_string(setup_.spec.max_region_bytes)};
  }
  if (Status s = client_.grow(need); !s) return s.error();
  std::byte* region = client_.region();
  put_u32(region, kFieldBatch, batch);
  put_u32(region, kFieldInputs, 0);
  put_u32(region, kFieldOutputs, 0);
  put_u64(region, kFieldOutputsAt, kHeaderBytes);
  auto reply =
      client_.call(Command::kPredict, kFromKept | predict_flags(), batch, deadline, "predict");
  if (!reply) return reply.error();
  auto rows = read_answer(batch, *reply, lengths, kept);
  if (!rows) {
    // The whole batch failed in predict: every request kept gets its error.
    for (size_t i : kept) faults_[i] = rows.error();
    return per;
  }
  for (size_t j = 0; j < kept.size(); ++j) per[kept[j]] = std::move((*rows)[j]);
  return per;
}

Expected<std::vector<Tensors>> PythonRunner::predict(std::span<Tensors> reqs, int64_t deadline) {
  const ModelMetadata& meta = setup_.metadata;
  const PythonSpec& spec = setup_.spec;
  const auto batch = static_cast<uint32_t>(reqs.size());
  // The batch's shape of each input: its requests' largest along each
  // dimension. Every size is checked against the region's limit before
  // anything is written: requests that vary in several dimensions can pad
  // to a batch far larger than any of them.
  std::vector<Entry> entries(meta.inputs.size());
  uint64_t at = kHeaderBytes;
  for (size_t k = 0; k < meta.inputs.size(); ++k) {
    const TensorSpec& t = meta.inputs[k];
    Shape dims = reqs[0][k].shape();
    for (const Tensors& r : reqs) {
      for (size_t d = 0; d < dims.size(); ++d) dims[d] = std::max(dims[d], r[k].shape()[d]);
    }
    dims.insert(dims.begin(), batch);
    const uint64_t bytes = checked_bytes(dims, dtype_size(t.dtype), spec.max_region_bytes);
    if (bytes == kTooLarge || at + bytes > spec.max_region_bytes) {
      return Error{ErrorCode::kModelError,
                   "a batch of " + std::to_string(batch) + " padded to " + shape_string(dims) +
                       " for input '" + t.name + "' needs more shared memory than the worker " +
                       "region's limit of " + std::to_string(spec.max_region_bytes) + " bytes"};
    }
    entries[k].dtype = t.dtype;
    entries[k].dims = dims;
    entries[k].offset = at;
    entries[k].bytes = bytes;
    at = align_up(at + bytes);
  }
  const size_t outputs_at = at;
  uint64_t need = outputs_at;
  for (const TensorSpec& t : answer_.outputs) {
    if (!t.variable()) need = std::min(need + guess_bytes(t, batch), kTooLarge);
  }
  if (need > spec.max_region_bytes) {
    return Error{ErrorCode::kModelError,
                 "a batch of " + std::to_string(batch) + " needs " + std::to_string(need) +
                     " bytes of shared memory, above the worker region's limit of " +
                     std::to_string(spec.max_region_bytes)};
  }
  if (Status s = client_.grow(need); !s) return s.error();
  std::byte* region = client_.region();

  // The inputs, written once: each request's tensor into its row of the batch.
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    const TensorSpec& t = meta.inputs[k];
    const size_t elem = dtype_size(t.dtype);
    const Shape item(e.dims.begin() + 1, e.dims.end());
    const size_t row = static_cast<size_t>(numel_of(item)) * elem;
    for (uint32_t i = 0; i < batch; ++i) {
      const Tensor& src = reqs[i][k];
      std::byte* dst = region + e.offset + i * row;
      if (src.nbytes() == row) {
        std::memcpy(dst, src.data(), row);
      } else {
        fill(dst, row / elem, t.dtype, t.pad_value);
        copy_block(dst, item, src.data(), src.shape(), src.shape(), elem);
      }
    }
    write_entry(region, k, e);
  }
  put_u32(region, kFieldBatch, batch);
  put_u32(region, kFieldInputs, static_cast<uint32_t>(entries.size()));
  put_u32(region, kFieldOutputs, 0);
  put_u64(region, kFieldOutputsAt, outputs_at);
  auto reply = client_.call(Command::kPredict, predict_flags(), batch, deadline, "predict");
  if (!reply) return reply.error();
  std::vector<int64_t> lengths;
  for (const Tensors& r : reqs) lengths.push_back(request_length(meta, r));
  std::vector<size_t> rows(batch);
  for (uint32_t i = 0; i < batch; ++i) rows[i] = i;
  if (setup_.has_postprocess) faults_.assign(batch, Status::Ok());
  return read_answer(batch, *reply, lengths, rows);
}

Expected<std::vector<Tensors>> PythonRunner::read_answer(uint32_t batch, Reply reply,
                                                         const std::vector<int64_t>& lengths,
                                                         const std::vector<size_t>& rows) {
  std::byte* region = client_.region();
  if (reply == Reply::kRaised || reply == Reply::kBadOutput) {
    return Error{ErrorCode::kModelError, read_message(region)};
  }
  if (reply != Reply::kOk && reply != Reply::kPartial) {
    return client_.lose(ErrorCode::kUnavailable, "the model's worker (" + client_.label() +
                                                     ") answered an unknown status " +
                                                     std::to_string(static_cast<uint32_t>(reply)));
  }
  auto outs = read_outputs(region, client_.region_size(), answer_, batch);
  if (!outs) {
    return Error{ErrorCode::kModelError, "the worker's answer: " + outs.error().message};
  }
  if (reply == Reply::kPartial) {
    // postprocess failed on these rows: [[row, text], ...].
    auto j = nlohmann::json::parse(read_message(region), nullptr, false);
    if (j.is_array()) {
      for (const auto& f : j) {
        if (!f.is_array() || f.size() != 2 || !f[0].is_number_unsigned() || !f[1].is_string())
          continue;
        const auto row = f[0].get<uint64_t>();
        if (row < rows.size() && rows[row] < faults_.size()) {
          faults_[rows[row]] = Error{ErrorCode::kModelError, f[1].get<std::string>()};
        }
      }
    }
  }
  const ModelMetadata& meta = answer_;
  std::vector<Tensors> per(batch);
  if (setup_.has_postprocess) {
    // The served outputs; a BYTES one's rows cut to their lengths.
    const Entry* lengths_entry = nullptr;
    if (outs->size() > setup_.served.outputs.size()) lengths_entry = &outs->back();
    size_t string_k = 0;
    const size_t strings = lengths_entry ? static_cast<size_t>(lengths_entry->dims[1]) : 0;
    for (size_t k = 0; k < setup_.served.outputs.size(); ++k) {
      const Entry& e = (*outs)[k];
      const TensorSpec& t = setup_.served.outputs[k];
      const size_t elem = dtype_size(e.dtype);
      const Shape got(e.dims.begin() + 1, e.dims.end());
      const size_t row = static_cast<size_t>(numel_of(got)) * elem;
      for (uint32_t i = 0; i < batch; ++i) {
        const std::byte* src = region + e.offset + i * row;
        if (t.dtype == DType::kBytes) {
          int64_t n = 0;
          std::memcpy(&n, region + lengths_entry->offset + (i * strings + string_k) * 8, 8);
          n = std::clamp<int64_t>(n, 0, static_cast<int64_t>(row));
          Tensor out(DType::kBytes, Shape{n});
          if (n) std::memcpy(out.data(), src, static_cast<size_t>(n));
          per[i].push_back(std::move(out));
        } else {
          Tensor out(t.dtype, got);
          if (row) std::memcpy(out.data(), src, row);
          per[i].push_back(std::move(out));
        }
      }
      if (t.dtype == DType::kBytes) ++string_k;
    }
    return per;
  }
  // One result per request; a variable dimension as long as the padding is
  // cut to the request's own length.
  int64_t padded = 0;
  for (int64_t n : lengths) padded = std::max(padded, n);
  for (size_t k = 0; k < outs->size(); ++k) {
    const Entry& e = (*outs)[k];
    const TensorSpec& t = meta.outputs[k];
    const size_t elem = dtype_size(t.dtype);
    const Shape got(e.dims.begin() + 1, e.dims.end());
    const size_t row = static_cast<size_t>(numel_of(got)) * elem;
    const Shape declared = t.item_shape();
    for (uint32_t i = 0; i < batch; ++i) {
      Shape own = got;
      for (size_t d = 0; d < own.size(); ++d) {
        if (declared[d] < 0 && padded > 0 && own[d] == padded) own[d] = lengths[i];
      }
      Tensor out(t.dtype, own);
      const std::byte* src = region + e.offset + i * row;
      if (own == got) {
        std::memcpy(out.data(), src, row);
      } else {
        copy_block(out.data(), own, src, got, own, elem);
      }
      per[i].push_back(std::move(out));
    }
  }
  return per;
}

RunnerFactory python_runner_factory(WorkerSetup setup) {
  return [setup = std::move(setup)](int lane) -> std::unique_ptr<Runner> {
    return std::make_unique<PythonRunner>(setup, lane);
  };
}

}  // namespace batchscope
