// SPDX-License-Identifier: GPL-3.0-or-later
#include "generation/gen_scheduler.h"

#include <algorithm>

#include "generation/gen_sampling.h"

namespace batchscope {

struct GenScheduler::Sequence {
  uint64_t id = 0;
  GenRequest req;
  std::vector<int32_t> tokens;  // the prompt, then the output
  uint32_t target = 0;          // tokens to prefill since it last joined
  uint32_t cached = 0;          // positions in the cache
  std::vector<int32_t> blocks;
  TextStream text;
  std::mt19937_64 rng;
  TimePoint deadline = kNever;
  TimePoint last_token{};
  bool cancelled = false;
  bool done = false;
  GenRecord record;

  Sequence(uint64_t i, GenRequest r)
      : id(i),
        req(std::move(r)),
        tokens(req.prompt),
        text(req.stop),
        rng(req.sampling.seed.value_or(i)) {}
  uint32_t to_prefill() const { return cached < target ? target - cached : 0; }
};

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kTimedOut: return "timeout";
    case FinishReason::kError: return "error";
  }
  return "?";
}

GenScheduler::GenScheduler(LmRunner& runner, Clock& clock) : runner_(runner), clock_(clock) {
  total_blocks_ = static_cast<uint32_t>(std::max(0, runner.info().num_blocks));
  free_.reserve(total_blocks_);
  for (uint32_t b = total_blocks_; b > 0; --b) free_.push_back(static_cast<int32_t>(b - 1));
}

GenScheduler::~GenScheduler() = default;

Status GenScheduler::check(const GenRequest& r) const {
  const LmInfo& m = runner_.info();
  if (r.prompt.empty()) return invalid_argument("the prompt is empty; it needs at least one token");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= m.vocab_size) {
      return invalid_argument("prompt token " + std::to_string(i) + " = " +
                              std::to_string(r.prompt[i]) + " is not in the vocabulary (0 to " +
                              std::to_string(m.vocab_size - 1) + ")");
    }
  }
  if (r.max_tokens < 1) return invalid_argument("max_tokens = 0; it must be at least 1");
  const uint64_t want = r.prompt.size() + uint64_t{r.max_tokens};
  if (want > static_cast<uint64_t>(m.context_length)) {
    return invalid_argument("the model's context is " + std::to_string(m.context_length) +
                            " tokens, but " + std::to_string(want) + " were asked for (" +
                            std::to_string(r.prompt.size()) +
                            " in the prompt, max_tokens = " + std::to_string(r.max_tokens) + ")");
  }
  const uint64_t pool = uint64_t{total_blocks_} * static_cast<uint64_t>(std::max(1, m.block_size));
  if (want > pool) {
    return invalid_argument("the cache holds " + std::to_string(pool) + " tokens, fewer than the " +
                            std::to_string(want) + " this request may need");
  }
  return Status::Ok();
}

void GenScheduler::add(uint64_t id, GenRequest r, TimePoint arrival, TimePoint deadline) {
  auto s = std::make_unique<Sequence>(id, std::move(r));
  s->target = static_cast<uint32_t>(s->tokens.size());
  s->deadline = deadline;
  s->record.id = id;
  s->record.arrival = arrival;
  s->record.prompt_tokens = static_cast<uint32_t>(s->tokens.size());
  by_id_[id] = s.get();
  waiting_.push_back(std::move(s));
}

void GenScheduler::cancel(uint64_t id) {
  if (auto it = by_id_.find(id); it != by_id_.end()) it->second->cancelled = true;
}

void GenScheduler::finish(Sequence& s, FinishReason reason, TimePoint when, StepOutcome* out) {
  if (s.done) return;
  s.done = true;
  if (reason != FinishReason::kError && reason != FinishReason::kCancelled) {
    if (std::string rest = s.text.finish(); !rest.empty() && s.req.on_text) {
      s.req.on_text(rest, 0, when);
    }
  }
  for (int32_t b : s.blocks) free_.push_back(b);
  s.blocks.clear();
  s.record.reason = reason;
  s.record.finished = when;
  s.record.text = s.text.text();
  if (s.req.on_done) s.req.on_done(s.record);
  if (out) {
    out->finished.push_back(std::move(s.record));
    out->finished.back().text.clear();
  }
  by_id_.erase(s.id);
}

void GenScheduler::expire(TimePoint now, StepOutcome& out) {
  const auto due = [&](const SeqPtr& s) {
    if (s->cancelled)
      finish(*s, FinishReason::kCancelled, now, &out);
    else if (now >= s->deadline)
      finish(*s, FinishReason::kTimedOut, now, &out);
    return s->done;
  };
  std::erase_if(waiting_, due);
  std::erase_if(running_, due);
}

std::vector<GenRecord> GenScheduler::fail_all(const std::string& message) {
  StepOutcome out;
  const TimePoint now = clock_.now();
  for (SeqPtr& s : running_) s->record.error = message, finish(*s, FinishReason::kError, now, &out);
  for (SeqPtr& s : waiting_) s->record.error = message, finish(*s, FinishReason::kError, now, &out);
  running_.clear();
  waiting_.clear();
  return std::move(out.finished);
}

void GenScheduler::preempt(uint64_t id) {
  auto it =
      std::find_if(running_.begin(), running_.end(), [&](const SeqPtr& s) { return s->id == id; });
  if (it == running_.end()) return;
  SeqPtr s = std::move(*it);
  running_.erase(it);
  for (int32_t b : s->blocks) free_.push_back(b);
  s->blocks.clear();
  s->cached = 0;
  s->target = static_cast<uint32_t>(s->tokens.size());  // the output so far is recomputed too
  ++s->record.preemptions;
  waiting_.push_front(std::move(s));
}

bool GenScheduler::take_token(Sequence& s, std::span<const float> logits, TimePoint when) {
  const LmInfo& m = runner_.info();
  const int32_t eos = m.eos_token;
  const int32_t t =
      sample_token(logits, s.req.sampling, s.req.ignore_eos ? eos : kNoToken, s.rng, scratch_);
  if (t == kNoToken) {
    s.record.error = "the model gave no possible next token (every logit NaN or -inf)";
    finish(s, FinishReason::kError, when, nullptr);
    return false;
  }
  if (t == eos) {
    finish(s, FinishReason::kStop, when, nullptr);
    return false;
  }
  s.tokens.push_back(t);
  GenRecord& r = s.record;
  if (r.output_tokens == 0)
    r.first_token = when;
  else
    r.gaps.push_back(when - s.last_token);
  s.last_token = when;
  ++r.output_tokens;
  const std::string piece = t < 256 ? s.text.push(static_cast<uint8_t>(t)) : std::string();
  if (s.req.on_text && (!piece.empty() || !s.text.stopped())) s.req.on_text(piece, 1, when);
  if (s.text.stopped())
    finish(s, FinishReason::kStop, when, nullptr);
  else if (r.output_tokens >= s.req.max_tokens)
    finish(s, FinishReason::kLength, when, nullptr);
  else if (s.tokens.size() >= static_cast<size_t>(m.context_length)) {
    finish(s, FinishReason::kLength, when, nullptr);
  }
  return true;
}

StepOutcome GenScheduler::step(const Options& o) {
  StepOutcome out;
  const TimePoint now = clock_.now();
  expire(now, out);

  std::vector<RunningSeq> rv;
  rv.reserve(running_.size());
  for (const SeqPtr& s : running_) {
    rv.push_back({.id = s->id,
                  .to_prefill = s->to_prefill(),
                  .cached = s->cached,
                  .blocks = static_cast<uint32_t>(s->blocks.size())});
  }
  std::vector<WaitingSeq> wv;
  wv.reserve(std::min<size_t>(waiting_.size(), o.max_num_seqs + 1));
  for (const SeqPtr& s : waiting_) {
    if (wv.size() > o.max_num_seqs) break;  // more than can join in one step
    wv.push_back({.id = s->id, .to_prefill = s->target, .arrival = s->record.arrival});
  }
  const LmInfo& m = runner_.info();
  const uint32_t bs = static_cast<uint32_t>(std::max(1, m.block_size));
  const Plan plan = plan_step({.running = rv,
                               .waiting = wv,
                               .free_blocks = static_cast<uint32_t>(free_.size()),
                               .block_size = bs,
                               .now = now},
                              o);

  // Joins first (they are the head of the queue the plan saw), then the
  // preempted go back to the head.
  for (uint32_t i = 0; i < plan.admitted && !waiting_.empty(); ++i) {
    SeqPtr s = std::move(waiting_.front());
    waiting_.pop_front();
    if (s->record.admitted == kNever) s->record.admitted = now;
    running_.push_back(std::move(s));
  }
  for (uint64_t id : plan.preempt) preempt(id);

  // The model step: prefill chunks in plan order, then the decodes.
  LmStep batch;
  std::vector<Sequence*> prefilled, decoded;  // the rows of logits, in order
  std::vector<std::pair<Sequence*, uint32_t>> work;
  for (const PlanItem& item : plan.items) {
    Sequence* s = by_id_.at(item.id);
    for (uint32_t b = 0; b < item.new_blocks; ++b) {
      s->blocks.push_back(free_.back());
      free_.pop_back();
    }
    work.emplace_back(s, item.tokens);
    out.step.context_tokens += s->cached;
    out.step.seqs.emplace_back(s->id, item.prefill() ? item.tokens : 0);  // 0: a decode
    if (item.prefill()) {
      const bool last = s->cached + item.tokens == s->target;
      batch.prefills.push_back({std::span<const int32_t>(s->tokens).subspan(s->cached, item.tokens),
                                static_cast<int>(s->cached), s->blocks, last});
      if (last) prefilled.push_back(s);
      ++out.step.prefills;
      out.step.prefill_tokens += item.tokens;
    } else {
      batch.decodes.push_back({s->tokens.back(), static_cast<int>(s->cached), s->blocks});
      decoded.push_back(s);
      ++out.step.decodes;
    }
  }
  out.step.preempted = static_cast<uint32_t>(plan.preempt.size());
  if (work.empty()) {
    out.wake = plan.wake;
    for (const SeqPtr& s : waiting_) out.wake = std::min(out.wake, s->deadline);
    for (const SeqPtr& s : running_) out.wake = std::min(out.wake, s->deadline);
    out.ran = !out.finished.empty() || out.step.preempted > 0;
    return out;
  }

  out.ran = true;
  out.step.step = ++steps_;
  out.step.start = now;
  Expected<LmLogits> logits = [&]() -> Expected<LmLogits> {
    try {
      return runner_.step(batch);
    } catch (const std::exception& e) {
      return Error{ErrorCode::kModelError, e.what()};
    }
  }();
  const TimePoint end = clock_.now();
  out.step.end = end;
  const size_t rows = prefilled.size() + decoded.size();
  const size_t vocab = static_cast<size_t>(m.vocab_size);
  if (logits && (logits->rows != rows || logits->values.size() != rows * vocab)) {
    logits = Error{ErrorCode::kModelError, "the model returned " + std::to_string(logits->rows) +
                                               " rows of logits for " + std::to_string(rows)};
  }
  for (auto& [s, n] : work) s->cached += n;
  if (!logits) {
    for (auto& [s, n] : work) {
      s->record.error = logits.error().message;
      finish(*s, FinishReason::kError, end, nullptr);
    }
  } else {
    size_t row = 0;
    for (Sequence* s : prefilled) {
      out.step.output_tokens += take_token(*s, {logits->values.data() + vocab * row++, vocab}, end);
    }
    for (Sequence* s : decoded) {
      out.step.output_tokens += take_token(*s, {logits->values.data() + vocab * row++, vocab}, end);
    }
  }
  for (auto& [s, n] : work) {
    if (s->done) {
      out.finished.push_back(std::move(s->record));
      out.finished.back().text.clear();
      ++out.step.finished;
    }
  }
  std::erase_if(running_, [](const SeqPtr& s) { return s->done; });
  out.step.running = static_cast<uint32_t>(running_.size());
  out.step.waiting = static_cast<uint32_t>(waiting_.size());
  out.step.blocks_used = blocks_used();
  out.step.blocks_total = total_blocks_;
  return out;
}

}  // namespace batchscope
