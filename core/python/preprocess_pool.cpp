// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/preprocess_pool.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "python/python_runner.h"
#include "python/worker_process.h"
#include "python/worker_protocol.h"

namespace batchscope {

using namespace worker;

PreprocessPool::PreprocessPool(WorkerSetup setup) : setup_(std::move(setup)) {
  setup_.warm_batch = 0;  // a pool's process runs no predict
  prepared_.name = setup_.metadata.name;
  prepared_.outputs = setup_.metadata.inputs;
  for (const TensorSpec& t : prepared_.outputs) {
    answer_bytes_ = std::min(answer_bytes_ + guess_bytes(t, 1), kTooLarge);
  }
}

uint32_t PreprocessPool::length(const Tensors& input) const {
  return has_prepared_mark(input) ? request_length(setup_.metadata, input) : 0;
}

PreprocessPool::~PreprocessPool() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
    target_ = 0;
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  std::deque<Item> left;
  {
    std::lock_guard<std::mutex> g(mu_);
    left.swap(queue_);
  }
  for (Item& item : left) {
    item.next(Error{ErrorCode::kShuttingDown, "the model's preprocess pool stopped"});
  }
}

int PreprocessPool::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return target_;
}

void PreprocessPool::prepare(Tensors&& input, Next next) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (target_ > 0) {
      queue_.push_back({std::move(input), std::move(next)});
      work_cv_.notify_one();
      return;
    }
  }
  next(std::move(input));  // no process: the lane prepares it
}

Status PreprocessPool::configure(const Options& options) {
  const int want = static_cast<int>(options.preprocess_workers);
  std::unique_lock<std::mutex> lk(mu_);
  if (stopping_) return {};
  const bool first = !configured_;
  configured_ = true;
  const int had = target_;
  target_ = want;
  if (want < had) {
    work_cv_.notify_all();  // those past the target retire after their request
    if (want == 0) pass_all(lk);
    return {};
  }
  // Threads that retired are joined before their index is used again.
  for (int i = had; i < want; ++i) {
    if (i < static_cast<int>(threads_.size()) && threads_[i].joinable()) {
      if (running_[i]) continue;  // still finishing its last request: it serves on
      threads_[i].join();
    }
    if (i >= static_cast<int>(threads_.size())) {
      threads_.resize(i + 1);
      running_.resize(i + 1, false);
    }
    running_[i] = true;
    if (first) ++starting_;
    threads_[i] = std::thread([this, i] { process_loop(i); });
  }
  if (!first) return {};
  ready_cv_.wait(lk, [this] { return starting_ == 0; });
  if (start_error_.empty()) return {};
  const std::string why = start_error_;
  target_ = 0;
  work_cv_.notify_all();
  pass_all(lk);
  return invalid_argument(why);
}

void PreprocessPool::pass_all(std::unique_lock<std::mutex>& lk) {
  std::deque<Item> left;
  left.swap(queue_);
  lk.unlock();
  for (Item& item : left) item.next(std::move(item.input));
  lk.lock();
}

void PreprocessPool::process_loop(int index) {
  const std::string file = std::filesystem::path(setup_.spec.file).filename().string();
  WorkerClient client(setup_, file + " preprocess " + std::to_string(index));
  Status started = client.start();
  bool counted_start = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (starting_ > 0) {
      counted_start = true;
      if (!started && start_error_.empty()) start_error_ = started.message();
      --starting_;
      ready_cv_.notify_all();
    }
  }
  if (!started) {
    if (counted_start) {  // the first configure() reports it
      std::lock_guard<std::mutex> g(mu_);
      running_[index] = false;
      return;
    }
    std::fprintf(stderr, "[%s] %s\n", client.label().c_str(), started.message().c_str());
    (void)client.lose(ErrorCode::kUnavailable, started.message());
  }
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return index >= target_ || !queue_.empty(); });
    if (index >= target_) break;
    if (client.lost()) {
      lk.unlock();
      client.recover();
      lk.lock();
      if (client.lost() && !queue_.empty() && index < target_) {
        // Not back: the oldest request is answered rather than left waiting.
        Item item = std::move(queue_.front());
        queue_.pop_front();
        lk.unlock();
        item.next(Error{ErrorCode::kUnavailable,
                        "no preprocess worker of " + file + " is ready; it is being restarted"});
        lk.lock();
      }
      continue;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    run_one(client, item);
    lk.lock();
  }
  running_[index] = false;
  if (target_ == 0) pass_all(lk);
}

void PreprocessPool::run_one(WorkerClient& client, Item& item) {
  item.next.started(std::chrono::steady_clock::now());
  if (Status alive = client.check_alive(); !alive) {
    item.next(alive.error());
    return;
  }
  auto at = client.write_request(item.input, setup_.served.inputs, answer_bytes_);
  if (!at) {
    item.next(at.error());
    return;
  }
  const int64_t deadline = steady_now_ms() + setup_.spec.worker_timeout_ms;
  auto reply = client.call(Command::kPreprocess, 0, 1, deadline, "preprocess");
  if (!reply) {
    item.next(reply.error());
    return;
  }
  std::byte* region = client.region();
  if (*reply == Reply::kRaised || *reply == Reply::kBadOutput) {
    item.next(preprocess_fault(*reply, read_message(region)));
    return;
  }
  if (*reply != Reply::kOk) {
    item.next(
        client.lose(ErrorCode::kUnavailable, "the preprocess worker (" + client.label() +
                                                 ") answered an unknown "
                                                 "status " +
                                                 std::to_string(static_cast<uint32_t>(*reply))));
    return;
  }
  auto outs = read_outputs(region, client.region_size(), prepared_, 1);
  if (!outs) {
    item.next(
        Error{ErrorCode::kModelError, "the preprocess worker's answer: " + outs.error().message});
    return;
  }
  Tensors ready;
  ready.reserve(outs->size() + 1);
  for (const Entry& e : *outs) {
    Tensor t(e.dtype, Shape(e.dims.begin() + 1, e.dims.end()));
    if (e.bytes) std::memcpy(t.data(), region + e.offset, e.bytes);
    ready.push_back(std::move(t));
  }
  mark_prepared(ready);
  item.next(std::move(ready));
}

}  // namespace batchscope
