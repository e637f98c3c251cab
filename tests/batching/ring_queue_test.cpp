// SPDX-License-Identifier: GPL-3.0-or-later
// RingQueue: FIFO order across wrap-around and growth, erase in the middle,
// move-only elements, every element destroyed once, storage given back.

#include "batching/ring_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace batchscope {
namespace {

std::vector<int> contents(const RingQueue<std::unique_ptr<int>>& q) {
  std::vector<int> out;
  for (size_t i = 0; i < q.size(); ++i) out.push_back(*q[i]);
  return out;
}

TEST(RingQueue, KeepsFifoOrderAcrossWrapAroundAndGrowth) {
  RingQueue<std::unique_ptr<int>> q;
  int next = 0, expect = 0;
  // Push 10, pop 7, repeatedly: the head walks round the ring and the ring
  // grows while wrapped.
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) q.push_back(std::make_unique<int>(next++));
    for (int i = 0; i < 7; ++i) {
      ASSERT_EQ(*q.front(), expect++);
      q.pop_front();
    }
    ASSERT_EQ(q.size(), size_t(3 * (round + 1)));
    ASSERT_EQ(*q.back(), next - 1);
  }
  EXPECT_EQ(q.capacity(), 128u);  // 67 at the peak
  std::vector<int> want;
  for (int v = expect; v < next; ++v) want.push_back(v);
  EXPECT_EQ(contents(q), want);
}

TEST(RingQueue, EraseClosesTheGapInOrder) {
  RingQueue<std::unique_ptr<int>> q;
  for (int i = 0; i < 12; ++i) q.push_back(std::make_unique<int>(i));
  for (int i = 0; i < 10; ++i) q.pop_front();  // head near the end of 16 slots
  for (int i = 12; i < 18; ++i) q.push_back(std::make_unique<int>(i));  // wraps
  q.erase(3);
  EXPECT_EQ(contents(q), (std::vector<int>{10, 11, 12, 14, 15, 16, 17}));
  q.erase(0);
  q.erase(q.size() - 1);
  EXPECT_EQ(contents(q), (std::vector<int>{11, 12, 14, 15, 16}));
}

struct Counted {
  static inline int live = 0;
  explicit Counted(int) { ++live; }
  Counted(Counted&&) noexcept { ++live; }
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --live; }
};

TEST(RingQueue, DestroysEveryElementOnceAndGivesBackALargeRing) {
  {
    RingQueue<Counted> q;
    for (int i = 0; i < 3000; ++i) q.push_back(Counted(i));
    EXPECT_EQ(Counted::live, 3000);
    q.erase(1500);
    EXPECT_EQ(Counted::live, 2999);
    while (q.size() > 10) q.pop_front();
    EXPECT_EQ(Counted::live, 10);
    EXPECT_EQ(q.capacity(), 4096u);
    q.clear();
    EXPECT_EQ(Counted::live, 0);
    EXPECT_EQ(q.capacity(), 0u);  // more than kKeep slots: given back
    for (int i = 0; i < 5; ++i) q.push_back(Counted(i));
    q.clear();
    EXPECT_EQ(q.capacity(), 16u);  // a small ring is kept
    for (int i = 0; i < 5; ++i) q.push_back(Counted(i));
  }
  EXPECT_EQ(Counted::live, 0);  // the destructor destroyed the last five
}

}  // namespace
}  // namespace batchscope
