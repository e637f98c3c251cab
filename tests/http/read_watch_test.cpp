// SPDX-License-Identifier: GPL-3.0-or-later
// ReadWatch's deadlines at their exact boundaries, on explicit times: no
// sleeps, no sockets.

#include <gtest/gtest.h>

#include "http/read_watch.h"

namespace batchscope {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const TimePoint t0 = TimePoint(std::chrono::seconds(100));
const ReadTimeouts kTimeouts{milliseconds(300), 1000, milliseconds(500)};

TEST(ReadWatch, AHeadMustArriveWithinItsTimeoutOfItsFirstByte) {
  ReadWatch w(kTimeouts);
  EXPECT_FALSE(w.check(t0, HttpPhase::kHead, 0, 0));
  EXPECT_FALSE(w.check(t0 + milliseconds(300) - nanoseconds(1), HttpPhase::kHead, 0, 0));
  auto late = w.check(t0 + milliseconds(300), HttpPhase::kHead, 0, 0);
  ASSERT_TRUE(late);
  EXPECT_EQ(*late, "the request line and headers did not arrive within 300 ms");
}

TEST(ReadWatch, IdleTimeIsNotCounted) {
  ReadWatch w(kTimeouts);
  EXPECT_FALSE(w.check(t0, HttpPhase::kIdle, 0, 0));
  EXPECT_FALSE(w.check(t0 + std::chrono::hours(1), HttpPhase::kIdle, 0, 0));
  // The head's clock starts when its first byte is seen.
  EXPECT_FALSE(w.check(t0 + std::chrono::hours(1), HttpPhase::kHead, 0, 0));
  EXPECT_FALSE(w.check(t0 + std::chrono::hours(1) + milliseconds(299), HttpPhase::kHead, 0, 0));
}

TEST(ReadWatch, ANewMessageStartsItsOwnClock) {
  ReadWatch w(kTimeouts);
  EXPECT_FALSE(w.check(t0, HttpPhase::kHead, 0, 0));
  // The first request completed and the next one's head began, both in one read.
  EXPECT_FALSE(w.check(t0 + milliseconds(250), HttpPhase::kHead, 0, 1));
  EXPECT_FALSE(w.check(t0 + milliseconds(540), HttpPhase::kHead, 0, 1));
  EXPECT_TRUE(w.check(t0 + milliseconds(550), HttpPhase::kHead, 0, 1));
}

TEST(ReadWatch, ABodyMustKeepTheMinimumRateAfterTheGrace) {
  ReadWatch w(kTimeouts);
  EXPECT_FALSE(w.check(t0, HttpPhase::kBody, 0, 0));
  // Within the grace period nothing is asked of it.
  EXPECT_FALSE(w.check(t0 + milliseconds(500), HttpPhase::kBody, 0, 0));
  // After it: 1000 bytes/s on average, exactly, is enough.
  EXPECT_FALSE(w.check(t0 + milliseconds(600), HttpPhase::kBody, 600, 0));
  auto slow = w.check(t0 + milliseconds(600), HttpPhase::kBody, 599, 0);
  ASSERT_TRUE(slow);
  EXPECT_EQ(*slow, "the request body arrived at 998 bytes/s, below the minimum of 1000 bytes/s");
}

TEST(ReadWatch, ARestartForgivesTheListenersOwnPause) {
  ReadWatch w(kTimeouts);
  EXPECT_FALSE(w.check(t0, HttpPhase::kHead, 0, 0));
  w.restart(t0 + milliseconds(1000));  // the listener had stopped reading
  EXPECT_FALSE(w.check(t0 + milliseconds(1200), HttpPhase::kHead, 0, 0));
  EXPECT_TRUE(w.check(t0 + milliseconds(1300), HttpPhase::kHead, 0, 0));
}

TEST(ReadWatch, ZeroMinimumRateTurnsTheBodyRuleOff) {
  ReadWatch w(ReadTimeouts{milliseconds(300), 0, milliseconds(0)});
  EXPECT_FALSE(w.check(t0, HttpPhase::kBody, 0, 0));
  EXPECT_FALSE(w.check(t0 + std::chrono::hours(1), HttpPhase::kBody, 0, 0));
}

}  // namespace
}  // namespace batchscope
