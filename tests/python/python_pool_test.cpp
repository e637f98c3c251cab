// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model with preprocess and postprocess under the batching engine,
// with real worker processes: requests prepared by the pool (or, with no
// pool processes, by the lane), faults of preprocess and postprocess kept
// to their own request, a pool process that segfaults restarted, and the
// pool resized while traffic flows. Every request is answered exactly once.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "python/preprocess_pool.h"
#include "python/python_runner.h"
#include "tests/batching/test_support.h"
#include "tests/python/python_files.h"

namespace batchscope {
namespace {

// Every request's answers by its index.
class Answers {
 public:
  explicit Answers(size_t n) : calls_(n, 0), results_(n) {}
  Engine::Done callback(size_t i) {
    return [this, i](TensorResponse&& r) {
      std::lock_guard g(mu_);
      ++calls_[i];
      results_[i] = std::move(r.result);
      ++answered_;
      cv_.notify_all();
    };
  }
  bool wait_all() {
    std::unique_lock g(mu_);
    return cv_.wait_for(g, test::kSafety, [&] { return answered_ >= calls_.size(); });
  }
  int calls(size_t i) const { return calls_[i]; }
  const Expected<Tensors>& result(size_t i) const { return *results_[i]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> calls_;
  std::vector<std::optional<Expected<Tensors>>> results_;
  size_t answered_ = 0;
};

struct Model {
  WorkerSetup setup;
  ModelMetadata served;
};

Model prepared_model(const char* file = "prepared.py") {
  PythonSpec spec = test::spec(test::handler(file));
  auto h = describe_python(spec);
  EXPECT_TRUE(h.ok()) << h.error().message;
  Model m;
  m.setup.spec = spec;
  m.setup.metadata = h->model;
  m.setup.served = h->metadata;
  m.setup.has_preprocess = h->has_preprocess;
  m.setup.has_postprocess = h->has_postprocess;
  m.setup.warm_batch = 8;
  m.setup.threads = 1;
  m.served = h->metadata;
  return m;
}

// The pool, with counts of its own (the lanes have theirs).
std::shared_ptr<PreprocessPool> pool_of(const Model& m) {
  WorkerSetup w = m.setup;
  w.counts = std::make_shared<WorkerCounts>();
  return std::make_shared<PreprocessPool>(w);
}

std::string text_of(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data()), t.nbytes());
}

Options options(uint32_t preprocess_workers) {
  Options o;
  o.max_batch_size = 8;
  o.max_wait_us = 1000;
  o.preprocess_workers = preprocess_workers;
  return o;
}

// Rows of different lengths out of preprocess, and outputs as long as the
// padded batch: each answer is cut to its own request's length, and the
// batch records its padding, whether the pool prepared the requests or the
// lane did.
void cut_to_length(uint32_t pool) {
  Model m = prepared_model("tokens_prepared.py");
  auto stage = pool_of(m);
  Options o = options(pool);
  o.max_wait_us = 200'000;  // the three requests ride in one batch
  o.max_batch_size = 3;
  Engine engine(python_runner_factory(m.setup), o);
  bind_model(engine, m.served, [stage] { return stage; });
  ASSERT_TRUE(engine.start().ok());
  const std::vector<std::string> texts = {"a bb", "a bb ccc dddd", "eeeee"};
  Answers answers(texts.size());
  for (size_t i = 0; i < texts.size(); ++i)
    engine.submit({Tensor::from_bytes(texts[i])}, answers.callback(i));
  ASSERT_TRUE(answers.wait_all());
  engine.stop();
  // They rode in one batch, padded to 4: else nothing was cut.
  RecordBatch records;
  engine.drain_records(records);
  ASSERT_EQ(records.requests.size(), texts.size());
  for (const RequestRecord& r : records.requests) ASSERT_EQ(r.batch_size, 3u) << "pool " << pool;
  // Their padding is recorded: lengths 2, 4 and 1 padded to 4.
  ASSERT_EQ(records.batches.size(), 1u);
  EXPECT_EQ(records.batches[0].longest, 4u) << "pool " << pool;
  EXPECT_EQ(records.batches[0].length_sum, 7u) << "pool " << pool;
  const std::vector<std::vector<int64_t>> want = {{10, 20}, {10, 20, 30, 40}, {50}};
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto& r = answers.result(i);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ((*r)[0].shape(), Shape{static_cast<int64_t>(want[i].size())}) << "pool " << pool;
    const auto got = (*r)[0].as<int64_t>();
    EXPECT_EQ(std::vector<int64_t>(got.begin(), got.end()), want[i]) << "pool " << pool;
  }
}

TEST(PythonPool, OutputsAreCutToEachRequestsLengthWhenThePoolPrepares) { cut_to_length(1); }
TEST(PythonPool, OutputsAreCutToEachRequestsLengthWhenTheLanePrepares) { cut_to_length(0); }

TEST(PythonPool, TheHandlerDeclaresWhatRequestsSendAndWhatPredictTakes) {
  Model m = prepared_model();
  ASSERT_EQ(m.served.inputs.size(), 1u);
  EXPECT_EQ(m.served.inputs[0].dtype, DType::kBytes);
  EXPECT_EQ(m.setup.metadata.inputs[0].dtype, DType::kFloat32);
  ASSERT_EQ(m.served.outputs.size(), 2u);
  EXPECT_EQ(m.served.outputs[0].name, "label");
  EXPECT_TRUE(m.setup.has_preprocess);
  EXPECT_TRUE(m.setup.has_postprocess);
}

// Sends "0".."n-1" with the faulty texts at fixed places and checks every answer.
void serve_and_check(uint32_t pool, bool prepared_by_pool) {
  Model m = prepared_model();
  auto stage = pool_of(m);
  Engine engine(python_runner_factory(m.setup), options(pool));
  bind_model(engine, m.served, [stage] { return stage; });
  ASSERT_TRUE(engine.start().ok());
  EXPECT_EQ(stage->health().ready, static_cast<int>(pool));

  constexpr size_t kRequests = 120;
  Answers answers(kRequests);
  auto text = [](size_t i) -> std::string {
    if (i == 30) return "raise";
    if (i == 60) return "shape";
    return std::to_string(i);
  };
  for (size_t i = 0; i < kRequests; ++i) {
    engine.submit({Tensor::from_bytes(text(i))}, answers.callback(i));
  }
  ASSERT_TRUE(answers.wait_all());
  engine.stop();
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(answers.calls(i), 1) << i;
    const auto& r = answers.result(i);
    if (i == 30) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);  // 422: the input was not readable
      EXPECT_NE(r.error().message.find("Model.preprocess raised ValueError: cannot read 'raise'"),
                std::string::npos)
          << r.error().message;
    } else if (i == 60) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, ErrorCode::kModelError);
      EXPECT_NE(r.error().message.find("Model.preprocess's input 'x' has shape [3]; expected [2]"),
                std::string::npos)
          << r.error().message;
    } else if (i == 99) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, ErrorCode::kModelError);
      EXPECT_NE(r.error().message.find("Model.postprocess raised KeyError"), std::string::npos)
          << r.error().message;
    } else {
      ASSERT_TRUE(r.ok()) << i << ": " << r.error().message;
      ASSERT_EQ(r->size(), 2u);
      const std::string want = "{\"value\": " + std::to_string(2 * i + 1) +
                               ".0, \"pool\": " + (prepared_by_pool ? "true" : "false") + "}";
      EXPECT_EQ(text_of((*r)[0]), want);
      EXPECT_EQ((*r)[1].as<float>()[0], static_cast<float>(2 * i + 1));
    }
  }
}

TEST(PythonPool, ThePoolPreparesEachRequestAndFaultsStayWithTheirRequest) {
  serve_and_check(2, true);
}

TEST(PythonPool, WithNoPoolProcessTheLanePreparesTheBatchItsRequestsOneByOne) {
  serve_and_check(0, false);
}

TEST(PythonPool, APoolProcessThatSegfaultsFailsItsRequestAndIsRestarted) {
  Model m = prepared_model();
  auto stage = pool_of(m);
  Engine engine(python_runner_factory(m.setup), options(1));
  bind_model(engine, m.served, [stage] { return stage; });
  ASSERT_TRUE(engine.start().ok());
  Answers first(1);
  engine.submit({Tensor::from_bytes("crash")}, first.callback(0));
  ASSERT_TRUE(first.wait_all());
  ASSERT_FALSE(first.result(0).ok());
  EXPECT_EQ(first.result(0).error().code, ErrorCode::kUnavailable);
  EXPECT_NE(first.result(0).error().message.find("SIGSEGV"), std::string::npos)
      << first.result(0).error().message;
  // The next request waits for the restarted process.
  Answers next(1);
  engine.submit({Tensor::from_bytes("3")}, next.callback(0));
  ASSERT_TRUE(next.wait_all());
  ASSERT_TRUE(next.result(0).ok()) << next.result(0).error().message;
  EXPECT_EQ((*next.result(0))[1].as<float>()[0], 7.0f);
  engine.stop();
  EXPECT_EQ(stage->health().deaths, 1u);
  EXPECT_EQ(stage->health().restarts, 1u);
}

TEST(PythonPool, ThePoolIsResizedLiveAndEveryRequestIsAnsweredOnce) {
  Model m = prepared_model();
  auto stage = pool_of(m);
  Engine engine(python_runner_factory(m.setup), options(2));
  bind_model(engine, m.served, [stage] { return stage; });
  ASSERT_TRUE(engine.start().ok());
  constexpr size_t kRequests = 600;
  Answers answers(kRequests);
  const uint32_t sizes[] = {0, 1, 3, 0, 2};
  for (size_t i = 0; i < kRequests; ++i) {
    if (i % 120 == 60) ASSERT_TRUE(engine.set_options(options(sizes[i / 120])).ok());
    engine.submit({Tensor::from_bytes(std::to_string(i % 90))}, answers.callback(i));
    if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  ASSERT_TRUE(answers.wait_all());
  engine.stop();
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(answers.calls(i), 1) << i;
    const auto& r = answers.result(i);
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().message;
    EXPECT_EQ((*r)[1].as<float>()[0], static_cast<float>(2 * (i % 90) + 1)) << i;
  }
  EXPECT_EQ(stage->size(), 2);
}

}  // namespace
}  // namespace batchscope
