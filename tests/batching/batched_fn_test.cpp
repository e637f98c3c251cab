// SPDX-License-Identifier: GPL-3.0-or-later
// BatchedFn, the engine behind a plain function: each call's own result, a
// full queue refused at once, a throwing handler failing its batch only,
// call_many, std::future conversion, and options refused by name.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "batching/batched_fn.h"

namespace batchscope {
namespace {

TEST(BatchedFn, EachCallGetsItsOwnResult) {
  std::atomic<int> batches{0};
  BatchedFn<std::string, size_t> lengths(
      [&](std::span<std::string> in) {
        ++batches;
        std::vector<size_t> out;
        for (auto& s : in) out.push_back(s.size());
        return out;
      },
      Options{.max_batch_size = 16, .max_wait_us = 2000});
  std::vector<Future<Expected<size_t>>> fs;
  for (int i = 0; i < 100; ++i)
    fs.push_back(lengths.call(std::string(static_cast<size_t>(i), 'x')));
  for (int i = 0; i < 100; ++i) {
    Expected<size_t> r = fs[static_cast<size_t>(i)].get();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, static_cast<size_t>(i));
  }
  EXPECT_LT(batches.load(), 100);  // calls were grouped
}

TEST(BatchedFn, QueueFullIsADistinctErrorAtOnce) {
  std::mutex gate;
  gate.lock();  // the handler blocks until the test unlocks
  BatchedFn<int, int> f(
      [&](std::span<int> in) {
        std::lock_guard g(gate);
        return std::vector<int>(in.begin(), in.end());
      },
      Options{.max_batch_size = 1, .max_wait_us = 0, .queue_capacity = 1});
  auto first = f.call(1);  // runs (blocked in the handler) or queues
  std::vector<Future<Expected<int>>> more;
  for (int i = 0; i < 3; ++i) more.push_back(f.call(2 + i));
  // At most one of these fits the queue; the others are refused at once.
  int full = 0;
  for (auto& m : more) {
    if (m.ready()) {
      Expected<int> r = m.get();
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, ErrorCode::kQueueFull);
      ++full;
    }
  }
  EXPECT_GE(full, 1);
  gate.unlock();
  EXPECT_EQ(*first.get(), 1);
}

TEST(BatchedFn, AThrowingHandlerFailsItsBatchOnly) {
  BatchedFn<int, int> f(
      [](std::span<int> in) {
        if (in[0] < 0) throw std::runtime_error("negative input");
        return std::vector<int>(in.begin(), in.end());
      },
      Options{.max_batch_size = 1, .max_wait_us = 0});
  Expected<int> bad = f.call(-1).get();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kModelError);
  EXPECT_NE(bad.error().message.find("negative input"), std::string::npos);
  EXPECT_EQ(*f.call(5).get(), 5);
}

TEST(BatchedFn, CallManyAnswersEachInputInOrderAndTakesMoveOnlyInputs) {
  std::atomic<int> batches{0};
  BatchedFn<std::unique_ptr<int>, int> twice(
      [&](std::span<std::unique_ptr<int>> in) {
        ++batches;
        std::vector<int> out;
        for (auto& p : in) out.push_back(2 * *p);
        return out;
      },
      Options{.max_batch_size = 16, .max_wait_us = 2000});
  std::vector<std::unique_ptr<int>> in;
  for (int i = 0; i < 50; ++i) in.push_back(std::make_unique<int>(i));
  auto fs = twice.call_many(std::move(in));
  ASSERT_EQ(fs.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    Expected<int> r = fs[static_cast<size_t>(i)].get();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 2 * i);
  }
  EXPECT_LE(batches.load(), 8);  // admitted together, cut mostly full
  EXPECT_EQ(twice.status().counters.admitted, 50u);
}

TEST(BatchedFn, ItsFuturesConvertToStdFutures) {
  BatchedFn<int, int> f([](std::span<int> in) { return std::vector<int>(in.begin(), in.end()); },
                        Options{.max_batch_size = 8, .max_wait_us = 100});
  std::vector<std::future<Expected<int>>> fs;
  for (int i = 0; i < 64; ++i) fs.push_back(f.call(i));
  for (int i = 0; i < 64; ++i) {
    Expected<int> r = fs[static_cast<size_t>(i)].get();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, i);
  }
}

TEST(BatchedFn, InvalidOptionsThrowNamingTheField) {
  auto make = [] {
    BatchedFn<int, int> f([](std::span<int> in) { return std::vector<int>(in.begin(), in.end()); },
                          Options{.max_batch_size = 0});
  };
  EXPECT_THROW(make(), std::invalid_argument);
}

}  // namespace
}  // namespace batchscope
