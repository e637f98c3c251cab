// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/worker_client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "common/metadata_json.h"
#include "python/worker_process.h"

namespace batchscope {
namespace {

using namespace worker;

constexpr int kLastLines = 12;
constexpr size_t kSlack = size_t{1} << 20;

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

// "a batch of 8" for predict, "a request" for a request's own work.
std::string work_text(const char* what, uint32_t batch) {
  if (std::string_view(what) == "predict") return "a batch of " + std::to_string(batch);
  return batch == 1 ? "a request" : std::to_string(batch) + " requests";
}

}  // namespace

struct WorkerClient::Worker {
  SharedRegion region;
  EventFd to_worker;    // the worker sleeps on it, in select()
  EventFd from_worker;  // this side polls it
  std::unique_ptr<ChildProcess> process;
  bool ready = false;
};

std::string region_metadata_json(const WorkerSetup& setup) {
  const bool same = setup.served.inputs.empty() && setup.served.outputs.empty();
  return "{\"model\":" + metadata_json(setup.metadata) +
         ",\"served\":" + metadata_json(same ? setup.metadata : setup.served) + "}";
}

WorkerClient::WorkerClient(const WorkerSetup& setup, std::string label)
    : setup_(setup), label_(std::move(label)) {}

WorkerClient::~WorkerClient() { stop(); }

int WorkerClient::pid() const {
  return worker_ && worker_->process && !worker_->process->end() ? worker_->process->pid() : -1;
}

std::byte* WorkerClient::region() { return worker_->region.data(); }

size_t WorkerClient::region_size() const { return worker_ ? worker_->region.size() : 0; }

Status WorkerClient::grow(size_t bytes) {
  if (Status s = worker_->region.grow(bytes); !s) return s;
  put_u64(worker_->region.data(), kFieldRegionBytes, worker_->region.size());
  return {};
}

Expected<uint64_t> WorkerClient::write_request(const Tensors& request,
                                               const std::vector<TensorSpec>& specs,
                                               uint64_t answer_bytes) {
  const uint64_t limit = setup_.spec.max_region_bytes;
  std::vector<Entry> entries(specs.size());
  uint64_t at = kHeaderBytes;
  for (size_t k = 0; k < specs.size() && k < request.size(); ++k) {
    const Tensor& t = request[k];
    Shape dims = t.shape();
    dims.insert(dims.begin(), 1);
    const uint64_t bytes = checked_bytes(dims, dtype_size(t.dtype()), limit);
    if (bytes == kTooLarge || at + bytes > limit) {
      return Error{ErrorCode::kInvalidArgument,
                   "input '" + specs[k].name + "' of " + std::to_string(t.nbytes()) +
                       " bytes needs more shared memory than the worker region's limit of " +
                       std::to_string(limit) + " bytes"};
    }
    entries[k] = Entry{t.dtype(), std::move(dims), at, bytes};
    at = align_up(at + bytes);
  }
  const uint64_t answer_at = at;
  if (answer_bytes >= kTooLarge || at + answer_bytes > limit) {
    return Error{ErrorCode::kModelError,
                 "a request's answer needs more shared memory than the "
                 "worker region's limit of " +
                     std::to_string(limit) + " bytes"};
  }
  if (Status s = grow(at + answer_bytes); !s) return s.error();
  std::byte* r = region();
  for (size_t k = 0; k < entries.size(); ++k) {
    if (entries[k].bytes) std::memcpy(r + entries[k].offset, request[k].data(), entries[k].bytes);
    write_entry(r, k, entries[k]);
  }
  put_u32(r, kFieldBatch, 1);
  put_u32(r, kFieldInputs, static_cast<uint32_t>(entries.size()));
  put_u32(r, kFieldOutputs, 0);
  put_u64(r, kFieldOutputsAt, answer_at);
  return answer_at;
}

Status WorkerClient::check_alive() {
  if (!worker_ || !worker_->process) {
    return lose(ErrorCode::kUnavailable, "the model's worker (" + label_ + ") is not running");
  }
  if (worker_->process->ended()) {  // it died between commands (killed, out of memory)
    setup_.counts->deaths.fetch_add(1);
    return lose(ErrorCode::kUnavailable, "the model's worker (" + label_ + ") " +
                                             end_text(*worker_->process) + " while idle. " +
                                             last_lines(*worker_->process));
  }
  return {};
}

Status WorkerClient::start() {
  stop();
  const PythonSpec& spec = setup_.spec;
  const std::string script = spec.worker_script.empty() ? python_worker_path() : spec.worker_script;
  if (script.empty()) {
    return invalid_argument(
        "cannot find Batchscope's Python worker module; set "
        "BATCHSCOPE_PYTHON_WORKER to batchscope_worker.py's path");
  }
  size_t bytes = kHeaderBytes + kSlack;
  const uint32_t batch = std::max<uint32_t>(1, setup_.warm_batch);  // the region's first guess
  for (const auto* specs : {&setup_.metadata.inputs, &setup_.metadata.outputs,
                            &setup_.served.inputs, &setup_.served.outputs}) {
    for (const TensorSpec& t : *specs) bytes = std::min(bytes + guess_bytes(t, batch), kTooLarge);
  }
  bytes = std::min<size_t>(bytes, std::max<size_t>(spec.max_region_bytes, kHeaderBytes + kSlack));

  auto w = std::make_unique<Worker>();
  auto region = SharedRegion::create(bytes, "batchscope-worker");
  if (!region) return region.error();
  w->region = std::move(*region);
  if (Status s = init_header(w->region.data(), w->region.size(), region_metadata_json(setup_));
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
  // -u: its output as it comes; -B: no bytecode written beside the worker
  // module (an installed one's folder is not this user's to write).
  r.argv = {spec.python,    "-u",
            "-B",           script,
            "serve",        spec.file,
            "--region",     "3",
            "--to",         "4",
            "--from",       "5",
            "--parent",     std::to_string(::getpid()),
            "--warm-batch", std::to_string(setup_.warm_batch)};
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

void WorkerClient::stop() {
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

void WorkerClient::recover() {
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

Error WorkerClient::lose(ErrorCode code, std::string message) {
  if (worker_ && worker_->ready) {
    worker_->ready = false;
    setup_.counts->ready.fetch_sub(1);
  }
  lost_ = true;
  ++failed_starts_;
  return Error{code, std::move(message)};
}

Expected<Reply> WorkerClient::await_answer(int64_t deadline_ms, uint32_t batch, bool answered,
                                           const char* what) {
  Worker& w = *worker_;
  for (;; answered = false) {
    if (!answered) {
      const int left = static_cast<int>(std::max<int64_t>(0, deadline_ms - steady_now_ms()));
      switch (w.process->wait(w.from_worker, left)) {
        case ChildProcess::Wake::kRung: break;
        case ChildProcess::Wake::kEnded:
          setup_.counts->deaths.fetch_add(1);
          return lose(
              ErrorCode::kUnavailable,
              "the model's worker (" + label_ + ", pid " + std::to_string(w.process->pid()) + ") " +
                  end_text(*w.process) + " while running " +
                  (std::string_view(what) == "predict" ? std::string()
                                                       : std::string(what) + " on ") +
                  work_text(what, batch) + "; it is being restarted. " + last_lines(*w.process));
        case ChildProcess::Wake::kTimedOut:
          w.process->kill();
          setup_.counts->timeouts.fetch_add(1);
          return lose(ErrorCode::kModelTimedOut,
                      std::string(what) + " ran past --worker-timeout-ms = " +
                          std::to_string(setup_.spec.worker_timeout_ms) + " on " +
                          work_text(what, batch) + "; the worker (" + label_ + ", pid " +
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

Expected<Reply> WorkerClient::call(Command command, uint32_t flags, uint32_t batch,
                                   int64_t deadline_ms, const char* what) {
  Worker& w = *worker_;
  std::byte* region = w.region.data();
  put_u32(region, kFieldFlags, flags);
  put_u32(region, kFieldStatus, ~0u);
  send(region, command, seq_);
  w.process->forget_tail();  // a fault quotes what this command's run wrote
  w.to_worker.ring();
  bool answered = spin_for_answer(region, seq_, last_ns_);
  if (answered) w.from_worker.take();  // its ring; one still on its way is skipped later
  auto reply = await_answer(deadline_ms, batch, answered, what);
  while (reply && *reply == Reply::kNeedSpace) {
    region = w.region.data();
    const uint64_t want = get_u64(region, kFieldNeedBytes);
    const bool fits = want <= setup_.spec.max_region_bytes && w.region.grow(want).ok();
    region = w.region.data();
    put_u64(region, kFieldRegionBytes, w.region.size());
    send(region, fits ? Command::kGrown : Command::kDrop, seq_);
    w.to_worker.ring();
    if (!fits) {
      // The worker lets go of the answer and says so, before the next command.
      if (auto ack = await_answer(deadline_ms, batch, false, what); !ack) return ack.error();
      return Error{ErrorCode::kModelError,
                   "the answer of " + std::string(what) + " on " + work_text(what, batch) +
                       " needs " + std::to_string(want) +
                       " bytes of shared memory, above the worker region's limit of " +
                       std::to_string(setup_.spec.max_region_bytes)};
    }
    reply = await_answer(deadline_ms, batch, false, what);
  }
  if (!reply) return reply.error();
  last_ns_ = get_u64(w.region.data(), kFieldPredictNs);
  last_post_ns_ = command == Command::kPredict ? get_u64(w.region.data(), kFieldPostNs) : 0;
  return reply;
}

}  // namespace batchscope
