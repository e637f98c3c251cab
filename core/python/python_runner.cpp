// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/python_runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/metadata_json.h"
#include "common/padding.h"
#include "python/worker_process.h"
#include "python/worker_protocol.h"

namespace batchscope {
namespace {

using namespace worker;

constexpr int kLastLines = 12;
constexpr size_t kSlack = size_t{1} << 20;

constexpr uint64_t kTooLarge = uint64_t{1} << 62;

// The bytes of a tensor shaped `dims`; kTooLarge when past `limit` (or
// where the product would overflow).
uint64_t checked_bytes(const Shape& dims, size_t elem, uint64_t limit) {
  uint64_t n = elem;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > limit) {
      return kTooLarge;
    }
  }
  return n;
}

// A tensor spec's bytes for `batch` requests; a variable dimension counts
// as its largest, or 64 where it has none (a first guess the region grows
// past); at most kTooLarge.
uint64_t guess_bytes(const TensorSpec& spec, uint32_t batch) {
  Shape dims{batch};
  const Shape item = spec.item_shape();
  for (size_t d = 0; d < item.size(); ++d) {
    dims.push_back(item[d] >= 0 ? item[d] : spec.item_max(d) > 0 ? spec.item_max(d) : 64);
  }
  const uint64_t n = checked_bytes(dims, dtype_size(spec.dtype), kTooLarge);
  return n == kTooLarge ? n : align_up(n);
}

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
  }
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A short batch is answered sooner than the kernel wakes a sleeper (tens of
// microseconds on a small VM): the answer's sequence number is watched for
// up to spin_ns() first, where the last batch's predict took less than that
// ($BATCHSCOPE_WORKER_SPIN_US, default 50; 0: never).
// The worker writes the sequence after the rest of its answer; x86 keeps
// stores in order, so seeing it means seeing the answer. Elsewhere this
// side always sleeps on the eventfd.
uint64_t spin_ns() {
  static const uint64_t ns = [] {
    const char* env = std::getenv("BATCHSCOPE_WORKER_SPIN_US");
    return env && *env ? std::strtoull(env, nullptr, 10) * 1000 : uint64_t{50'000};
  }();
  return ns;
}

bool spin_for_answer(std::byte* region, uint64_t seq, uint64_t last_predict_ns) {
#if defined(__x86_64__)
  const uint64_t limit = spin_ns();
  if (limit == 0 || last_predict_ns > limit) return false;
  std::atomic_ref<uint64_t> done(*reinterpret_cast<uint64_t*>(region + kFieldDoneSeq));
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(limit);
  for (int i = 0;; ++i) {
    if (done.load(std::memory_order_acquire) == seq) return true;
    asm volatile("" ::: "memory");
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
  }
#else
  (void)region, (void)seq, (void)last_predict_ns;
  return false;
#endif
}

// A command for the worker: the command, then the next sequence number,
// which the worker watches for (the caller then rings it).
void send(std::byte* region, Command c, uint64_t& seq) {
  put_u32(region, kFieldCommand, static_cast<uint32_t>(c));
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(region + kFieldSeq))
      .store(++seq, std::memory_order_release);
}

// How a worker ended; a worker reaped elsewhere has no status to tell.
std::string end_text(const ChildProcess& p) {
  return p.end() ? p.end()->text() : std::string("ended");
}

// What a worker wrote while running the batch it died with.
std::string last_lines(const ChildProcess& p) {
  const std::string t = p.tail(kLastLines);
  return t.empty() ? "It wrote nothing meanwhile." : "Its last lines:\n" + t;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

struct PythonRunner::Worker {
  SharedRegion region;
  EventFd to_worker;    // the worker sleeps on it, in select()
  EventFd from_worker;  // this side polls it
  std::unique_ptr<ChildProcess> process;
  bool ready = false;
};

PythonRunner::PythonRunner(WorkerSetup setup, int lane) : setup_(std::move(setup)), lane_(lane) {
  label_ = file_name(setup_.spec.file) + " lane " + std::to_string(lane_);
}

PythonRunner::~PythonRunner() { stop_worker(); }

int PythonRunner::pid() const {
  return worker_ && worker_->process && !worker_->process->end() ? worker_->process->pid() : -1;
}

size_t PythonRunner::region_bytes() const { return worker_ ? worker_->region.size() : 0; }

Status PythonRunner::prepare() { return start(); }

Status PythonRunner::start() {
  stop_worker();
  const PythonSpec& spec = setup_.spec;
  const std::string script = spec.worker_script.empty() ? python_worker_path() : spec.worker_script;
  if (script.empty()) {
    return invalid_argument(
        "cannot find Batchscope's Python worker module; set "
        "BATCHSCOPE_PYTHON_WORKER to batchscope_worker.py's path");
  }
  size_t bytes = kHeaderBytes + kSlack;
  const uint32_t batch = std::max<uint32_t>(1, setup_.warm_batch);
  for (const auto* specs : {&setup_.metadata.inputs, &setup_.metadata.outputs}) {
    for (const TensorSpec& t : *specs) bytes = std::min(bytes + guess_bytes(t, batch), kTooLarge);
  }
  bytes = std::min<size_t>(bytes, std::max<size_t>(spec.max_region_bytes, kHeaderBytes + kSlack));

  auto w = std::make_unique<Worker>();
  auto region = SharedRegion::create(bytes, "batchscope-worker");
  if (!region) return region.error();
  w->region = std::move(*region);
  if (Status s = init_header(w->region.data(), w->region.size(), metadata_json(setup_.metadata));
      !s) {
    return s;
  }
  auto to = EventFd::create(true);  // the worker waits in select(), then reads
  auto from = EventFd::create(true);
  if (!to) return to.error();
  if (!from) return from.error();
  w->to_worker = std::move(*to);
  w->from_worker = std::move(*from);

  SpawnRequest r;
  r.argv = {spec.python,
            "-u",
            script,
            "serve",
            spec.file,
            "--region",
            "3",
            "--to",
            "4",
            "--from",
            "5",
            "--parent",
            std::to_string(::getpid()),
            "--warm-batch",
            std::to_string(batch)};
  if (!spec.class_name.empty()) {
    r.argv.push_back("--class");
    r.argv.push_back(spec.class_name);
  }
  for (const auto& [key, value] : spec.options) {
    r.argv.push_back("--option");
    r.argv.push_back(key + "=" + value);
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads =
      setup_.threads > 0 ? setup_.threads : std::max(1, cores / std::max(1, setup_.lanes));
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    r.env_defaults.emplace_back(name, std::to_string(threads));
  }
  r.pass_fds = {w->region.fd(), w->to_worker.fd(), w->from_worker.fd()};
  r.echo_prefix = "[" + label_ + "] ";
  auto child = ChildProcess::spawn(r);
  if (!child) return child.error();
  w->process = std::move(*child);

  const std::string what = "the Python model " + spec.file + " (" + label_ + ")";
  switch (w->process->wait(w->from_worker, spec.start_timeout_ms)) {
    case ChildProcess::Wake::kRung: break;
    case ChildProcess::Wake::kEnded:
      return invalid_argument(what + ": the worker " + end_text(*w->process) +
                              " before it was ready; its last lines:\n" +
                              w->process->tail(kLastLines));
    case ChildProcess::Wake::kTimedOut:
      w->process->kill();
      return invalid_argument(what + ": the worker was not ready within " +
                              std::to_string(spec.start_timeout_ms) +
                              " ms (import, construction and warm-up); its last lines:\n" +
                              w->process->tail(kLastLines));
  }
  const auto status = static_cast<Reply>(get_u32(w->region.data(), kFieldStatus));
  if (status != Reply::kReady) {
    const std::string message = read_message(w->region.data());
    w->process->kill();
    return invalid_argument(what + " failed to start: " + message);
  }
  w->ready = true;
  worker_ = std::move(w);
  setup_.counts->ready.fetch_add(1);
  return {};
}

void PythonRunner::stop_worker() {
  if (!worker_) return;
  if (worker_->ready) setup_.counts->ready.fetch_sub(1);
  if (worker_->process && !worker_->process->end()) {
    send(worker_->region.data(), Command::kQuit, seq_);
    worker_->to_worker.ring();
    // A worker that does not quit at once is killed (its destructor).
    for (int i = 0; i < 50 && !worker_->process->end(); ++i) {
      if (worker_->process->wait(worker_->from_worker, 20) == ChildProcess::Wake::kEnded) break;
    }
  }
  worker_.reset();
}

void PythonRunner::recover() {
  if (failed_starts_ > 0) {
    const int shift = std::min(failed_starts_ - 1, 6);
    const auto wait =
        std::min(std::chrono::milliseconds(100 << shift), std::chrono::milliseconds(5000));
    std::this_thread::sleep_for(wait);
  }
  if (Status s = start(); !s) {
    ++failed_starts_;
    std::fprintf(stderr, "[%s] could not restart the worker: %s\n", label_.c_str(),
                 s.message().c_str());
    return;
  }
  setup_.counts->restarts.fetch_add(1);
  lost_ = false;
}

Error PythonRunner::lose(ErrorCode code, std::string message) {
  if (worker_ && worker_->ready) {
    worker_->ready = false;
    setup_.counts->ready.fetch_sub(1);
  }
  lost_ = true;
  ++failed_starts_;
  return Error{code, std::move(message)};
}

Expected<std::vector<Tensors>> PythonRunner::run(std::span<Tensors> inputs) {
  if (inputs.empty()) return std::vector<Tensors>{};
  if (!worker_ || !worker_->process) {
    return lose(ErrorCode::kUnavailable, "the model's worker (" + label_ + ") is not running");
  }
  if (worker_->process->ended()) {  // it died between batches (killed, out of memory)
    setup_.counts->deaths.fetch_add(1);
    return lose(ErrorCode::kUnavailable, "the model's worker (" + label_ + ") " +
                                             end_text(*worker_->process) + " while idle. " +
                                             last_lines(*worker_->process));
  }
  auto out = exchange(inputs);
  if (out.ok()) failed_starts_ = 0;
  return out;
}

Expected<Reply> PythonRunner::await_answer(int64_t deadline_ms, uint32_t batch, bool answered) {
  Worker& w = *worker_;
  for (;; answered = false) {
    if (!answered) {
      const int left = static_cast<int>(std::max<int64_t>(0, deadline_ms - steady_now_ms()));
      switch (w.process->wait(w.from_worker, left)) {
        case ChildProcess::Wake::kRung: break;
        case ChildProcess::Wake::kEnded:
          setup_.counts->deaths.fetch_add(1);
          return lose(ErrorCode::kUnavailable,
                      "the model's worker (" + label_ + ", pid " +
                          std::to_string(w.process->pid()) + ") " + end_text(*w.process) +
                          " while running a batch of " + std::to_string(batch) +
                          "; it is being restarted. " + last_lines(*w.process));
        case ChildProcess::Wake::kTimedOut:
          w.process->kill();
          setup_.counts->timeouts.fetch_add(1);
          return lose(ErrorCode::kModelTimedOut,
                      "predict ran past --worker-timeout-ms = " +
                          std::to_string(setup_.spec.worker_timeout_ms) + " on a batch of " +
                          std::to_string(batch) + "; the worker (" + label_ + ", pid " +
                          std::to_string(w.process->pid()) + ") was killed and is being restarted");
      }
    }
    std::byte* region = w.region.data();
    const uint64_t done =
        std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(region + kFieldDoneSeq))
            .load(std::memory_order_acquire);
    if (done != seq_) continue;  // a ring of an answer already taken
    return static_cast<Reply>(get_u32(region, kFieldStatus));
  }
}

Expected<std::vector<Tensors>> PythonRunner::exchange(std::span<Tensors> reqs) {
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
  for (const TensorSpec& t : meta.outputs) {
    if (!t.variable()) need = std::min(need + guess_bytes(t, batch), kTooLarge);
  }
  if (need > spec.max_region_bytes) {
    return Error{ErrorCode::kModelError,
                 "a batch of " + std::to_string(batch) + " needs " + std::to_string(need) +
                     " bytes of shared memory, above the worker region's limit of " +
                     std::to_string(spec.max_region_bytes)};
  }
  Worker& w = *worker_;
  if (Status s = w.region.grow(need); !s) return s.error();
  std::byte* region = w.region.data();
  put_u64(region, kFieldRegionBytes, w.region.size());

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
  put_u32(region, kFieldStatus, ~0u);
  send(region, Command::kPredict, seq_);
  w.process->forget_tail();  // a fault quotes what this batch's run wrote
  w.to_worker.ring();

  // One deadline for the whole batch, whatever rings and growth it meets.
  const int64_t deadline = steady_now_ms() + spec.worker_timeout_ms;
  bool answered = spin_for_answer(region, seq_, last_predict_ns_);
  if (answered) w.from_worker.take();  // its ring; one still on its way is skipped later
  auto reply = await_answer(deadline, batch, answered);
  while (reply && *reply == Reply::kNeedSpace) {
    region = w.region.data();
    const uint64_t want = get_u64(region, kFieldNeedBytes);
    const bool fits = want <= spec.max_region_bytes && w.region.grow(want).ok();
    region = w.region.data();
    put_u64(region, kFieldRegionBytes, w.region.size());
    send(region, fits ? Command::kGrown : Command::kDrop, seq_);
    w.to_worker.ring();
    if (!fits) {
      // The worker lets go of the batch and says so, before the next one.
      if (auto ack = await_answer(deadline, batch, false); !ack) return ack.error();
      return Error{ErrorCode::kModelError,
                   "the outputs of a batch of " + std::to_string(batch) + " need " +
                       std::to_string(want) +
                       " bytes of shared memory, above the worker region's limit of " +
                       std::to_string(spec.max_region_bytes)};
    }
    reply = await_answer(deadline, batch, false);
  }
  if (!reply) return reply.error();
  region = w.region.data();
  last_predict_ns_ = get_u64(region, kFieldPredictNs);
  if (*reply == Reply::kRaised || *reply == Reply::kBadOutput) {
    return Error{ErrorCode::kModelError, read_message(region)};
  }
  if (*reply != Reply::kOk) {
    return lose(ErrorCode::kUnavailable, "the model's worker (" + label_ +
                                             ") answered an unknown status " +
                                             std::to_string(static_cast<uint32_t>(*reply)));
  }

  auto outs = read_outputs(region, w.region.size(), meta, batch);
  if (!outs) {
    return Error{ErrorCode::kModelError, "the worker's answer: " + outs.error().message};
  }
  // One result per request; a variable dimension as long as the padding is
  // cut to the request's own length.
  std::vector<int64_t> lengths;
  int64_t padded = 0;
  for (const Tensors& r : reqs) {
    lengths.push_back(request_length(meta, r));
    padded = std::max(padded, lengths.back());
  }
  std::vector<Tensors> per(batch);
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
