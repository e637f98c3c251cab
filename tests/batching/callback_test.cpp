// SPDX-License-Identifier: GPL-3.0-or-later
// Callback: holds small and large callables, move-only ones too; empty from
// nullptr or an empty std::function; captured state released exactly once.

#include "batching/callback.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <future>
#include <memory>

namespace batchscope {
namespace {

using IntFn = Callback<int(int)>;

TEST(Callback, CallsSmallAndLargeCallablesAndMovesThem) {
  const int k = 3;
  IntFn small = [k](int x) { return x * k; };
  std::array<int, 32> big{};  // 128 bytes: beyond the inline storage
  big[31] = 7;
  IntFn large = [big](int x) { return x + big[31]; };
  EXPECT_EQ(small(2), 6);
  EXPECT_EQ(large(2), 9);
  IntFn moved = std::move(large);
  EXPECT_FALSE(large);  // NOLINT: checking the moved-from state
  EXPECT_EQ(moved(1), 8);
  moved = std::move(small);
  EXPECT_EQ(moved(5), 15);
}

TEST(Callback, OwnsAMoveOnlyCaptureAndReleasesItOnce) {
  std::promise<int> p;
  std::future<int> f = p.get_future();
  Callback<void(int)> set = [p = std::move(p)](int v) mutable { p.set_value(v); };
  Callback<void(int)> other = std::move(set);
  other(42);
  EXPECT_EQ(f.get(), 42);

  auto token = std::make_shared<int>(1);
  {
    Callback<void()> a = [token] {};
    std::array<std::shared_ptr<int>, 4> many{token, token, token, token};
    Callback<void()> b = [many] {};    // on the heap
    EXPECT_EQ(token.use_count(), 10);  // token, a, many and b's copy of many
    Callback<void()> c = std::move(b);
    EXPECT_EQ(token.use_count(), 10);
    a = nullptr;
    EXPECT_EQ(token.use_count(), 9);
  }
  EXPECT_EQ(token.use_count(), 1);
}

TEST(Callback, EmptyFromNullOrAnEmptyFunctionAndThrowsWhenCalled) {
  IntFn none = nullptr;
  std::function<int(int)> empty;
  IntFn from_empty = empty;
  EXPECT_FALSE(none);
  EXPECT_FALSE(from_empty);
  EXPECT_THROW(none(1), std::bad_function_call);
  std::function<int(int)> full = [](int x) { return -x; };
  IntFn from_full = full;
  ASSERT_TRUE(from_full);
  EXPECT_EQ(from_full(4), -4);
}

}  // namespace
}  // namespace batchscope
