// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model under the batching engine: two lanes of worker processes,
// one of which segfaults on a batch while traffic flows. Every request is
// answered exactly once: the dead worker's batch with 503's error, the rest
// by the model, and the lane comes back.
#include <gtest/gtest.h>

#include "python/python_runner.h"
#include "tests/batching/test_support.h"
#include "tests/python/python_files.h"

namespace batchscope {
namespace {

using test::Collector;

TEST(PythonEngine, ACrashFailsOnlyItsBatchAndEveryRequestIsAnsweredOnce) {
  PythonSpec spec = test::spec(test::handler("faults.py"));
  auto h = describe_python(spec);
  ASSERT_TRUE(h.ok()) << h.error().message;
  WorkerSetup w;
  w.spec = spec;
  w.metadata = h->metadata;
  w.warm_batch = 4;
  w.threads = 1;
  w.lanes = 2;
  auto counts = w.counts;
  Options o;
  o.max_batch_size = 4;
  o.max_wait_us = 2000;
  o.num_lanes = 2;
  Engine engine(python_runner_factory(w), o);
  bind_model(engine, h->metadata);
  ASSERT_TRUE(engine.start().ok());
  EXPECT_EQ(counts->ready.load(), 2);

  Collector c;
  constexpr int kRequests = 300;
  std::vector<RequestId> crashers;
  for (int i = 0; i < kRequests; ++i) {
    const float v = i % 100 == 50 ? 14.0f : static_cast<float>(i % 10);
    const float x[4] = {v, 0, 0, 0};
    auto id = engine.submit({Tensor::from_floats(x, {4})}, c.callback());
    ASSERT_TRUE(id.ok());
    if (v == 14.0f) crashers.push_back(*id);
  }
  ASSERT_TRUE(c.wait_for(kRequests));
  // The last crash's lane may still be restarting its worker.
  const auto until = std::chrono::steady_clock::now() + test::kSafety;
  while (counts->restarts.load() < crashers.size() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  engine.stop();
  for (const auto& [id, calls] : c.calls()) EXPECT_EQ(calls, 1) << id;
  EXPECT_EQ(c.size(), static_cast<size_t>(kRequests));
  size_t failed = 0;
  c.for_each([&](const TensorResponse& r) {
    if (r.result.ok()) {
      EXPECT_EQ(r.result->at(0).as<float>()[1], 1.0f);  // 2 * 0 + 1
      return;
    }
    ++failed;
    EXPECT_EQ(r.result.error().code, ErrorCode::kUnavailable) << r.result.error().message;
  });
  for (RequestId id : crashers) EXPECT_FALSE(c.at(id).result.ok());
  // Only the crashing requests' batches failed: at most a batch of 4 each.
  EXPECT_GE(failed, crashers.size());
  EXPECT_LE(failed, 4 * crashers.size());
  EXPECT_EQ(counts->deaths.load(), crashers.size());
  EXPECT_EQ(counts->restarts.load(), crashers.size());
}

}  // namespace
}  // namespace batchscope
