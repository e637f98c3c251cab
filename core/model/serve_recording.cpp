// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/serve_recording.h"

#include <algorithm>

#include "runs/history_writer.h"
#include "traffic/gen_load.h"

namespace batchscope {
namespace {

template <class T>
std::vector<T> after(const std::vector<T>& v, size_t from) {
  return from >= v.size() ? std::vector<T>{} : std::vector<T>(v.begin() + from, v.end());
}

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace

ServeRecording::ServeRecording(HistoryWriter& writer, HistoryRun header, ServeRecordOptions o,
                               TimePoint start)
    : writer_(writer), header_(std::move(header)), o_(std::move(o)) {
  header_.kind = "serve";
  begin(start);
}

void ServeRecording::begin(TimePoint start) {
  ++made_;
  Part& p = open_.emplace_back();
  p.start = start;
  p.tensor.start(header_.config, start);
  HistoryRun h = header_;
  h.label = o_.every_s > 0 ? o_.label + ", part " + std::to_string(made_) : o_.label;
  p.token = writer_.begin(std::move(h), start);
}

size_t ServeRecording::part_at(TimePoint t) const {
  for (size_t i = 0; i < open_.size(); ++i) {
    if (t >= open_[i].start && t < open_[i].cut) return i;
  }
  return kNone;  // arrived before the oldest open run: its run is closed
}

void ServeRecording::add(const RecordBatch& records, TimePoint now) {
  std::vector<RecordBatch> split(open_.size());
  auto at = [&](TimePoint t) -> RecordBatch* {
    const size_t i = part_at(t);
    return i == kNone ? nullptr : &split[i];
  };
  for (const RequestRecord& r : records.requests) {
    if (RecordBatch* b = at(r.times.arrival)) b->requests.push_back(r);
  }
  for (const BatchRecord& x : records.batches) {
    if (RecordBatch* b = at(x.batched)) b->batches.push_back(x);
  }
  for (const DepthSample& d : records.depth) {
    if (RecordBatch* b = at(d.time)) b->depth.push_back(d);
  }
  for (size_t i = 0; i < open_.size(); ++i) {
    Part& p = open_[i];
    p.tensor.add(split[i]);
    const RunData& d = p.tensor.so_far();
    if (d.requests.size() == p.requests && d.batches.size() == p.batches &&
        d.depth.size() == p.depth)
      continue;
    writer_.append(p.token, after(d.requests, p.requests), after(d.batches, p.batches),
                   after(d.depth, p.depth));
    p.requests = d.requests.size();
    p.batches = d.batches.size();
    p.depth = d.depth.size();
  }
  cut_and_close(now);
}

void ServeRecording::add_generation(const std::vector<GenRecord>& finished,
                                    const std::vector<StepRecord>& steps, TimePoint now) {
  generative_ = true;
  std::vector<std::vector<HistoryGenRequest>> rows(open_.size());
  std::vector<std::vector<StepRecord>> kept(open_.size());
  for (const GenRecord& r : finished) {
    if (const size_t i = part_at(r.arrival); i != kNone) {
      rows[i].push_back(history_row_of(r, open_[i].start));
    }
  }
  for (const StepRecord& x : steps) {
    if (const size_t i = part_at(x.start); i != kNone) kept[i].push_back(x);
  }
  for (size_t i = 0; i < open_.size(); ++i) {
    if (rows[i].empty() && kept[i].empty()) continue;
    Part& p = open_[i];
    p.generation.insert(p.generation.end(), rows[i].begin(), rows[i].end());
    p.steps.insert(p.steps.end(), kept[i].begin(), kept[i].end());
    writer_.append_generation(p.token, std::move(rows[i]), std::move(kept[i]));
  }
  cut_and_close(now);
}

void ServeRecording::add_body(std::string_view route, const std::string& body, TimePoint arrival) {
  const size_t i = part_at(arrival);
  if (i == kNone) return;
  std::vector<HistoryBody> one;
  one.push_back(HistoryBody{arrival - open_[i].start, std::string(route), body});
  writer_.append_bodies(open_[i].token, std::move(one));
}

void ServeRecording::cut_and_close(TimePoint now) {
  if (o_.every_s > 0 && now >= open_.back().start + seconds(o_.every_s)) {
    open_.back().cut = now;
    begin(now);
  }
  while (open_.size() > 1 && now >= open_.front().cut + o_.grace) {
    close(open_.front());
    open_.pop_front();
  }
}

void ServeRecording::close(Part& p) {
  const TimePoint end = p.cut;
  const double duration_s = std::chrono::duration<double>(end - p.start).count();
  if (generative_) {
    GenRun run;
    run.pattern = header_.config.pattern;
    run.target = header_.config.target;
    run.model = header_.model;
    run.options = describe_generation(header_.config.options);
    run.start = p.start;
    for (const HistoryGenRequest& q : p.generation) run.requests.push_back(gen_result_of(q));
    run.steps = p.steps;
    writer_.finish(p.token, gen_summary_json(run, summarize_gen(run, 0, 0)), duration_s);
    return;
  }
  RunData data = p.tensor.finish(end);
  const Duration window = seconds(std::clamp(duration_s / 40.0, 0.1, 10.0));
  writer_.finish(p.token, run_summary_json(data, summarize_run(data, window)), duration_s);
}

void ServeRecording::finish(TimePoint end) {
  if (open_.empty()) return;
  open_.back().cut = end;
  for (Part& p : open_) close(p);
  open_.clear();
}

bool ServeRecorder::going() {
  if (stopped_) return false;
  if (auto why = writer->failure()) {
    stopped_ = true;
    say.err(
        "batchscope serve: the recording stopped: %s; what was kept before is in %s, "
        "and serving goes on\n",
        why->c_str(), writer->path().c_str());
    return false;
  }
  return true;
}

void ServeRecorder::finish(TimePoint end) {
  if (!recording || stopped_) return;
  recording->finish(end);
  writer->flush();
  if (auto why = writer->failure()) {
    say.err("batchscope serve: the recording stopped: %s\n", why->c_str());
    return;
  }
  say.out("recorded %zu run(s) of kind serve in %s (batchscope runs list --kind serve)\n",
          recording->runs(), writer->path().c_str());
}

std::unique_ptr<ServeRecorder> open_serve_recorder(const ServeRecordChoice& c, HistoryRun header,
                                                   TimePoint start, const Say& say) {
  if (!c.on) return nullptr;
  auto r = std::make_unique<ServeRecorder>();
  r->say = say;
  r->writer = open_history_writer(c.history, "batchscope serve", say);
  if (!r->writer) return nullptr;
  r->recording = std::make_unique<ServeRecording>(*r->writer, std::move(header), c.options, start);
  return r;
}

}  // namespace batchscope
