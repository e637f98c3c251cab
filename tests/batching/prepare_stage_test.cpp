// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's prepare stage (runner.h's BasicPrepareStage) and a runner's
// faults of single requests: a request is queued only once the stage gives
// it back, with what the stage made; the stage's error answers it alone;
// requests in the stage count against queue_capacity; stop() waits for the
// stage to give back what it holds, and a drain runs it; configure() sees
// every options change. A runner's request_faults() answer those requests
// with their error and the rest of the batch with its results. The lengths
// a stage or a lane preparing its batch gives are its padding.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "runs/run_stages.h"
#include "tests/batching/test_support.h"

namespace batchscope {
namespace {

using test::input_of;

// Holds what it is given until release(); then adds 100 to each value, or
// fails a request whose value is negative.
class HeldStage final : public Engine::PrepareStage {
 public:
  void prepare(Tensors&& input, Next next) override {
    std::lock_guard g(mu_);
    held_.push_back({std::move(input), std::move(next)});
  }
  Status configure(const Options& o) override {
    std::lock_guard g(mu_);
    configured_.push_back(o.preprocess_workers);
    return Status::Ok();
  }
  void release() {
    std::deque<std::pair<Tensors, Next>> out;
    {
      std::lock_guard g(mu_);
      out.swap(held_);
    }
    for (auto& [in, next] : out) {
      const float v = in[0].as<float>()[0];
      if (v < 0) {
        next(Error{ErrorCode::kModelError, "cannot prepare " + std::to_string(v)});
        continue;
      }
      for (float& x : in[0].as<float>()) x += 100;
      next(std::move(in));
    }
  }
  // Says to each request held that its work began at `t`.
  void start_all(TimePoint t) {
    std::lock_guard g(mu_);
    for (auto& h : held_) h.second.started(t);
  }
  size_t held() {
    std::lock_guard g(mu_);
    return held_.size();
  }
  // A request it gave back (100 or more): its value is its length.
  uint32_t length(const Tensors& in) const override {
    const float v = in[0].as<float>()[0];
    return v >= 100 ? static_cast<uint32_t>(v) : 0;
  }
  std::vector<uint32_t> configured() {
    std::lock_guard g(mu_);
    return configured_;
  }

 private:
  std::mutex mu_;
  std::deque<std::pair<Tensors, Next>> held_;
  std::vector<uint32_t> configured_;
};

// Echoes its inputs, and fails the requests whose first value is 113.
class FaultingRunner final : public Runner {
 public:
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    faults_.assign(inputs.size(), Status::Ok());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i][0].as<float>()[0] == 113) faults_[i] = Error{ErrorCode::kModelError, "13"};
    }
    return std::vector<Tensors>(inputs.begin(), inputs.end());
  }
  std::span<const Status> request_faults() const override { return faults_; }

 private:
  std::vector<Status> faults_;
};

struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<TensorResponse>> got = std::vector<std::optional<TensorResponse>>(64);
  std::vector<int> calls = std::vector<int>(64, 0);
  int answered = 0;
  Engine::Done callback(size_t i) {
    return [this, i](TensorResponse&& r) {
      std::lock_guard g(mu);
      ++calls[i];
      got[i] = std::move(r);
      ++answered;
      cv.notify_all();
    };
  }
  bool wait(int n) {
    std::unique_lock g(mu);
    return cv.wait_for(g, test::kSafety, [&] { return answered >= n; });
  }
};

Options opts(uint32_t capacity = 1024) {
  Options o;
  o.max_batch_size = 8;
  o.max_wait_us = 0;
  o.queue_capacity = capacity;
  return o;
}

TEST(PrepareStage, RequestsAreQueuedAsTheStageGivesThemBackAndItsErrorsAnswerThemAlone) {
  auto stage = std::make_shared<HeldStage>();
  Engine engine([](int) { return std::make_unique<FaultingRunner>(); }, opts());
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  for (int i = 0; i < 20; ++i) {
    auto id = engine.submit(input_of(i == 5 ? -1.0f : static_cast<float>(i)), a.callback(i));
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, 0u);  // not queued yet: no id
  }
  EXPECT_EQ(stage->held(), 20u);
  EXPECT_EQ(engine.status().queue_depth, 0u);
  EXPECT_EQ(a.answered, 0);
  stage->release();
  ASSERT_TRUE(a.wait(20));
  engine.stop();
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(a.calls[i], 1) << i;
    const TensorResponse& r = *a.got[i];
    if (i == 5) {
      ASSERT_FALSE(r.result.ok());
      EXPECT_EQ(r.result.error().message, "cannot prepare -1.000000");
      EXPECT_EQ(r.id, 0u);
    } else if (i == 13) {  // the runner's fault of this request alone
      ASSERT_FALSE(r.result.ok());
      EXPECT_EQ(r.result.error().message, "13");
      EXPECT_GT(r.id, 0u);
    } else {
      ASSERT_TRUE(r.result.ok()) << i << ": " << r.result.error().message;
      EXPECT_EQ((*r.result)[0].as<float>()[0], 100.0f + i);  // what the stage made ran
      EXPECT_GT(r.id, 0u);
    }
  }
  const EngineCounters c = engine.status().counters;
  EXPECT_EQ(c.model_errors, 2u);  // the stage's error and the runner's fault
  EXPECT_EQ(c.ok, 18u);
  EXPECT_EQ(c.submitted, 20u);
}

TEST(PrepareStage, RequestsInTheStageCountAgainstTheQueueCapacity) {
  auto stage = std::make_shared<HeldStage>();
  Engine engine([](int) { return std::make_unique<FaultingRunner>(); }, opts(4));
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(engine.submit(input_of(1), a.callback(i)).ok());
  auto full = engine.submit(input_of(1), a.callback(4));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, ErrorCode::kQueueFull);
  EXPECT_NE(full.error().message.find("4 being prepared"), std::string::npos)
      << full.error().message;
  EXPECT_EQ(engine.status().preparing, 4u);
  EXPECT_EQ(engine.status().queue_depth, 0u);
  stage->release();
  ASSERT_TRUE(a.wait(5));
  EXPECT_EQ(engine.status().preparing, 0u);
  engine.stop();
}

TEST(PrepareStage, StopWaitsForTheStageAndADrainRunsWhatItGivesBack) {
  auto stage = std::make_shared<HeldStage>();
  Engine engine([](int) { return std::make_unique<FaultingRunner>(); }, opts());
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(engine.submit(input_of(2), a.callback(i)).ok());
  std::thread stopper([&] { engine.stop(StopMode::kDrain); });
  // stop() cannot end while the stage holds requests; new ones are refused.
  while (true) {
    Answers late;
    auto r = engine.submit(input_of(2), late.callback(0));
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, ErrorCode::kShuttingDown);
      break;
    }
    // Submitted before stop() closed the stage: it is held and answered too.
    stage->release();
    ASSERT_TRUE(late.wait(1));
  }
  stage->release();
  stopper.join();
  ASSERT_TRUE(a.wait(6));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(a.calls[i], 1);
    EXPECT_TRUE(a.got[i]->result.ok()) << a.got[i]->result.error().message;
  }
}

TEST(PrepareStage, ConfigureSeesStartAndEveryOptionsChange) {
  auto stage = std::make_shared<HeldStage>();
  Engine engine([](int) { return std::make_unique<FaultingRunner>(); }, opts());
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  Options o = opts();
  o.preprocess_workers = 3;
  ASSERT_TRUE(engine.set_options(o).ok());
  o.preprocess_workers = 0;
  ASSERT_TRUE(engine.set_options(o).ok());
  EXPECT_EQ(stage->configured(), (std::vector<uint32_t>{1, 3, 0}));
  Options bad = o;
  bad.preprocess_workers = 65;
  Status s = engine.set_options(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("preprocess_workers"), std::string::npos) << s.message();
  engine.stop();
}

// On a manual clock: the stage says when its work on a request began, and
// the runner how long its work after the model took; the records keep both.
// `pre`: how long of each run it says went to preparing its requests first.
class TimedRunner final : public Runner {
 public:
  explicit TimedRunner(ManualClock& clock, Duration pre = Duration::zero())
      : clock_(clock), pre_(pre) {}
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    clock_.advance(microseconds(100));
    return std::vector<Tensors>(inputs.begin(), inputs.end());
  }
  Duration last_postprocess() const override { return microseconds(40); }
  Duration last_preprocess() const override { return pre_; }

 private:
  ManualClock& clock_;
  Duration pre_;
};

TEST(PrepareStage, RecordsKeepWhenTheStageBeganAndWhenPostprocessBegan) {
  auto clock = std::make_shared<ManualClock>();
  auto stage = std::make_shared<HeldStage>();
  Engine engine([&](int) { return std::make_unique<TimedRunner>(*clock); }, opts(), clock);
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  const TimePoint t0 = clock->now();
  Answers a;
  ASSERT_TRUE(engine.submit(input_of(1.0f), a.callback(0)).ok());
  // 200 us waiting in the stage, 300 us of its work.
  clock->advance(microseconds(200));
  stage->start_all(clock->now());
  clock->advance(microseconds(300));
  stage->release();
  ASSERT_TRUE(a.wait(1));
  engine.stop();
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.requests.size(), 1u);
  const StageTimes& t = records.requests[0].times;
  EXPECT_EQ(t.arrival, t0);
  EXPECT_EQ(t.prepare_start, t0 + microseconds(200));
  EXPECT_EQ(t.admitted, t0 + microseconds(500));
  EXPECT_EQ(t.run_end - t.run_start, microseconds(100));
  EXPECT_EQ(t.post_start, t.run_end - microseconds(40));
  EXPECT_EQ(t.model_start, TimePoint{});  // the pool prepared it, not the lane
}

// A lane that prepares its batch's requests before the model says how long
// that took: the records keep when the model began.
TEST(PrepareStage, RecordsKeepWhenTheModelBeganAfterTheLanePreparedItsRequests) {
  auto clock = std::make_shared<ManualClock>();
  Engine engine([&](int) { return std::make_unique<TimedRunner>(*clock, microseconds(30)); },
                opts(), clock);
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  ASSERT_TRUE(engine.submit(input_of(1.0f), a.callback(0)).ok());
  ASSERT_TRUE(a.wait(1));
  engine.stop();
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.requests.size(), 1u);
  const StageTimes& t = records.requests[0].times;
  EXPECT_EQ(t.model_start, t.run_start + microseconds(30));
  EXPECT_EQ(t.post_start, t.run_end - microseconds(40));
  // In the run's stages: 30 us of preprocess, 30 of model, 40 of postprocess.
  RunStages stages;
  stages.add(records.requests[0]);
  EXPECT_EQ(stages.of(RunStage::kPreprocess).sum(), 30'000u);
  EXPECT_EQ(stages.of(RunStage::kModel).sum(), 30'000u);
  EXPECT_EQ(stages.of(RunStage::kPostprocess).sum(), 40'000u);
  EXPECT_TRUE(stages.of(RunStage::kPreprocessWait).empty());
}

// The stage gives each request's length as it hands it back: its batch
// records the padding, and buckets pick by it (never mixing lengths).
TEST(PrepareStage, TheLengthsItGivesArePaddedAndBucketed) {
  auto clock = std::make_shared<ManualClock>();
  auto stage = std::make_shared<HeldStage>();
  Options o = opts();
  o.max_batch_size = 2;
  o.max_wait_us = 1'000'000;  // on this clock, a bucket is cut when full
  o.padding = Padding::kBuckets;
  ASSERT_TRUE(parse_length_buckets("128,256", o).ok());
  Engine engine([&](int) { return std::make_unique<TimedRunner>(*clock); }, o, clock);
  ASSERT_TRUE(engine.set_prepare_stage(stage).ok());
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  const std::vector<float> values = {10, 50, 20, 60};  // 110 and 120 share a bucket
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(engine.submit(input_of(values[i]), a.callback(i)).ok());
  }
  stage->release();
  ASSERT_TRUE(a.wait(4));
  engine.stop();
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.batches.size(), 2u);
  EXPECT_EQ(records.batches[0].longest, 120u);
  EXPECT_EQ(records.batches[0].length_sum, 230u);
  EXPECT_EQ(records.batches[1].longest, 160u);
  EXPECT_EQ(records.batches[1].length_sum, 310u);
}

// Echoes its inputs, each request's value its prepared length; fails a
// batch holding a negative value.
class LengthRunner final : public Runner {
 public:
  Expected<std::vector<Tensors>> run(std::span<Tensors> inputs) override {
    lengths_.clear();
    for (const Tensors& in : inputs) {
      const float v = in[0].as<float>()[0];
      if (v < 0) return Error{ErrorCode::kModelError, "negative"};
      lengths_.push_back(static_cast<uint32_t>(v));
    }
    return std::vector<Tensors>(inputs.begin(), inputs.end());
  }
  std::span<const uint32_t> last_lengths() const override { return lengths_; }

 private:
  std::vector<uint32_t> lengths_;
};

// A lane that prepares its batch learns the lengths as it runs: the batch
// records the padding it ran, and a failed batch none.
TEST(PrepareStage, TheLengthsALanePreparedAreThePaddingOfItsBatch) {
  auto clock = std::make_shared<ManualClock>();
  Options o = opts();
  o.max_batch_size = 2;
  o.max_wait_us = 1'000'000;
  Engine engine([](int) { return std::make_unique<LengthRunner>(); }, o, clock);
  ASSERT_TRUE(engine.start().ok());
  Answers a;
  const std::vector<float> values = {3, 7, -1, 5};
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(engine.submit(input_of(values[i]), a.callback(i)).ok());
  }
  ASSERT_TRUE(a.wait(4));
  engine.stop();
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.batches.size(), 2u);
  EXPECT_EQ(records.batches[0].longest, 7u);
  EXPECT_EQ(records.batches[0].length_sum, 10u);
  EXPECT_TRUE(records.batches[1].failed);
  EXPECT_EQ(records.batches[1].longest, 0u);
}

}  // namespace
}  // namespace batchscope
