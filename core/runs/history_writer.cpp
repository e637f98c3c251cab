// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/history_writer.h"

#include <algorithm>

namespace batchscope {

HistoryWriter::HistoryWriter(std::unique_ptr<History> store, uint64_t request_cap)
    : store_(std::move(store)), cap_(request_cap), path_(store_->path()) {
  thread_ = std::thread([this] { loop(); });
}

HistoryWriter::~HistoryWriter() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

HistoryWriter::Token HistoryWriter::begin(HistoryRun header, TimePoint start, Token parent) {
  Op op;
  op.kind = Op::kBegin;
  op.header = std::move(header);
  op.start = start;
  // When the run's traffic started, to the millisecond, read here where the
  // steady clock's `start` was taken.
  op.wall_start = wall_time_of(start);
  if (op.header.started_at.empty()) op.header.started_at = utc_text(op.wall_start);
  op.parent = parent;
  {
    MutexLock lock(mu_);
    op.token = next_token_++;
  }
  const Token t = op.token;
  push(std::move(op));
  return t;
}

void HistoryWriter::append(Token run, std::vector<RunRequest> requests,
                           std::vector<BatchRecord> batches, std::vector<DepthSample> depth) {
  Op op;
  op.kind = Op::kAppend;
  op.token = run;
  op.requests = std::move(requests);
  op.batches = std::move(batches);
  op.depth = std::move(depth);
  push(std::move(op));
}

void HistoryWriter::append_bodies(Token run, std::vector<HistoryBody> bodies) {
  Op op;
  op.kind = Op::kAppendBodies;
  op.token = run;
  op.bodies = std::move(bodies);
  push(std::move(op));
}

void HistoryWriter::append_generation(Token run, std::vector<HistoryGenRequest> requests,
                                      std::vector<StepRecord> steps) {
  Op op;
  op.kind = Op::kAppendGen;
  op.token = run;
  op.generation = std::move(requests);
  op.steps = std::move(steps);
  push(std::move(op));
}

void HistoryWriter::finish(Token run, std::string summary, double duration_s) {
  Op op;
  op.kind = Op::kFinish;
  op.token = run;
  op.summary = std::move(summary);
  op.duration_s = duration_s;
  push(std::move(op));
}

void HistoryWriter::remove(int64_t id) {
  Op op;
  op.kind = Op::kRemove;
  op.id = id;
  push(std::move(op));
}

void HistoryWriter::relabel(int64_t id, std::string label) {
  Op op;
  op.kind = Op::kRelabel;
  op.id = id;
  op.summary = std::move(label);
  push(std::move(op));
}

void HistoryWriter::remove_run(Token run) {
  Op op;
  op.kind = Op::kRemove;
  op.token = run;
  push(std::move(op));
}

void HistoryWriter::relabel_run(Token run, std::string label) {
  Op op;
  op.kind = Op::kRelabel;
  op.token = run;
  op.summary = std::move(label);
  push(std::move(op));
}

void HistoryWriter::push(Op op) {
  {
    MutexLock lock(mu_);
    if (failure_) return;  // the history is off
    queue_.push_back(std::move(op));
    ++queued_;
  }
  wake_.notify_one();
}

void HistoryWriter::flush() {
  MutexLock lock(mu_);
  const uint64_t target = queued_;
  while (written_ < target && !failure_.has_value()) done_.wait(lock.unique());
}

std::optional<int64_t> HistoryWriter::id_of(Token run) const {
  MutexLock lock(mu_);
  auto it = ids_.find(run);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> HistoryWriter::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

void HistoryWriter::loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stop_ && queue_.empty()) wake_.wait(lock.unique());
    if (queue_.empty() && stop_) return;
    std::deque<Op> ops;
    ops.swap(queue_);
    const uint64_t n = ops.size();
    lock.unlock();
    std::vector<std::pair<Token, int64_t>> begun;
    Status s = write(ops, begun);
    lock.lock();
    if (s) {
      for (const auto& [t, id] : begun) ids_[t] = id;
    } else if (!failure_) {
      failure_ = s.message();
      queue_.clear();
    }
    written_ += n;
    done_.notify_all();
  }
}

// One transaction for everything taken. A failure rolls it back whole.
Status HistoryWriter::write(std::deque<Op>& ops, std::vector<std::pair<Token, int64_t>>& begun) {
  // Another process writing for longer than the busy timeout: wait again.
  Status began = store_->begin();
  for (int tries = 1; !began && store_->busy() && tries < 3; ++tries) began = store_->begin();
  if (!began) return began;
  for (Op& op : ops) {
    if (Status s = apply(op, begun); !s) {
      store_->rollback();
      return s;
    }
  }
  if (Status s = store_->commit(); !s) {
    store_->rollback();
    return s;
  }
  return {};
}

Status HistoryWriter::apply(Op& op, std::vector<std::pair<Token, int64_t>>& begun) {
  if (op.kind == Op::kBegin) {
    if (op.parent != 0) {
      auto p = begun_ids_.find(op.parent);
      if (p != begun_ids_.end()) op.header.parent_id = p->second;
    }
    auto id = store_->begin_run(op.header);
    if (!id) return id.error();
    begun_ids_[op.token] = *id;
    runs_[op.token] = RunState{*id, op.start, 0, 0, op.wall_start, 0};
    begun.emplace_back(op.token, *id);
    return {};
  }
  if (op.kind == Op::kRemove || op.kind == Op::kRelabel) {
    int64_t id = op.id;
    if (id == 0) {  // by token: a run this writer began, earlier in the queue
      auto b = begun_ids_.find(op.token);
      if (b == begun_ids_.end()) return {};
      id = b->second;
    }
    return op.kind == Op::kRemove ? store_->remove_in_transaction(id)
                                  : store_->relabel(id, op.summary);
  }
  auto it = runs_.find(op.token);
  if (it == runs_.end()) return {};  // a token this writer never began: nothing to add to
  RunState& r = it->second;
  if (op.kind == Op::kAppend) {
    r.seen += op.requests.size();
    const uint64_t room = cap_ > r.kept ? cap_ - r.kept : 0;
    const size_t keep = static_cast<size_t>(std::min<uint64_t>(room, op.requests.size()));
    std::span<const RunRequest> kept(op.requests.data(), keep);
    r.kept += keep;
    if (Status s = store_->append(r.id, r.start, kept, op.batches, op.depth); !s) return s;
    return store_->set_counts(r.id, r.seen, r.kept);
  }
  if (op.kind == Op::kAppendGen) {
    r.seen += op.generation.size();
    const uint64_t room = cap_ > r.kept ? cap_ - r.kept : 0;
    const size_t keep = static_cast<size_t>(std::min<uint64_t>(room, op.generation.size()));
    r.kept += keep;
    std::span<const HistoryGenRequest> kept(op.generation.data(), keep);
    if (Status s = store_->append_generation(r.id, r.start, kept); !s) return s;
    if (Status s = store_->append_steps(r.id, r.start, op.steps); !s) return s;
    return store_->set_counts(r.id, r.seen, r.kept);
  }
  if (op.kind == Op::kAppendBodies) {
    const uint64_t room = cap_ > r.bodies ? cap_ - r.bodies : 0;
    const size_t keep = static_cast<size_t>(std::min<uint64_t>(room, op.bodies.size()));
    r.bodies += keep;
    return store_->append_bodies(r.id, std::span<const HistoryBody>(op.bodies.data(), keep));
  }
  // It ended its duration after it started; without one, now.
  const std::string finished =
      op.duration_s > 0
          ? utc_text(r.wall_start + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                        std::chrono::duration<double>(op.duration_s)))
          : utc_now();
  Status s = store_->finish_run(r.id, op.summary, r.seen, r.kept, op.duration_s, finished);
  runs_.erase(it);
  return s;
}

}  // namespace batchscope
