// SPDX-License-Identifier: GPL-3.0-or-later
#include "torch/settle.h"

#include <gtest/gtest.h>

#include <vector>

namespace batchscope {
namespace {

// A run that advances a simulated wall clock by its window's scripted run
// time, and the thread's CPU clock by that time times the scripted CPU share:
// a share below 1 is a thread preempted for the rest. settle() reads the CPU
// clock at each window's start and end, which says which window runs.
struct Simulated {
  double wall = 0, cpu = 0;
  std::vector<std::pair<double, double>> script;  // (run time in s, CPU share), by window
  size_t cpu_reads = 0;

  SettleClocks clocks() {
    return {[this] { return wall; },
            [this] {
              ++cpu_reads;
              return cpu;
            }};
  }
  Status run() {
    const size_t w = std::min(cpu_reads / 2, script.size() - 1);
    const auto [t, share] = script[w];
    wall += t;
    cpu += t * share;
    return Status::Ok();
  }
};

SettleOptions options() {
  SettleOptions o;
  o.window_seconds = 0.0095;  // 10 runs of 1 ms
  o.min_runs = 1;
  return o;
}

TEST(Settle, AQuietSteadyRunSettlesInThreeWindows) {
  Simulated sim;
  sim.script = {{0.001, 1.0}};
  auto got = settle([&] { return sim.run(); }, options(), sim.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->settled);
  EXPECT_EQ(got->windows, 3);
  EXPECT_EQ(got->us.size(), 30u);
  EXPECT_NEAR(got->us.front(), 1000.0, 1e-6);
  EXPECT_DOUBLE_EQ(got->cpu_share, 1.0);
  EXPECT_NEAR(got->window_gap, 0.0, 1e-12);
  EXPECT_TRUE(got->why.empty());
}

TEST(Settle, WindowsWhileTheThreadIsPreemptedAreMeasuredAgain) {
  Simulated sim;
  // Four windows where a build takes the core (the thread runs 20% of the
  // time, and a run takes 5 ms of wall time), then a quiet machine.
  sim.script = {{0.005, 0.2}, {0.005, 0.2}, {0.005, 0.2}, {0.005, 0.2}, {0.001, 1.0}};
  auto got = settle([&] { return sim.run(); }, options(), sim.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->settled);
  // The preempted windows agree with each other, but are not taken.
  EXPECT_EQ(got->windows, 7);
  for (double us : got->us) EXPECT_NEAR(us, 1000.0, 1e-6);
}

TEST(Settle, ABusyMachineIsReportedUnsettledWithItsShare) {
  Simulated sim;
  sim.script = {{0.02, 0.13}};
  SettleOptions o = options();
  o.max_windows = 5;
  o.window_seconds = 0.095;  // 5 runs of 20 ms
  auto got = settle([&] { return sim.run(); }, o, sim.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->settled);
  EXPECT_EQ(got->windows, 5);
  EXPECT_NEAR(got->cpu_share, 0.13, 1e-9);
  EXPECT_EQ(got->why,
            "the measuring thread had a core for only 13% of its wall time (the machine is "
            "busy) after 5 windows");
  EXPECT_EQ(got->us.size(), 15u);  // the last three windows are still returned
}

TEST(Settle, MediansThatKeepMovingDoNotSettle) {
  Simulated sim;
  // 1.0, 1.3, 1.0, 1.3 ... ms: the mean of three is 1.1 or 1.2 ms, and the
  // farthest window is 18% or 17% from it.
  for (int w = 0; w < 10; ++w) sim.script.push_back({w % 2 ? 0.0013 : 0.001, 1.0});
  SettleOptions o = options();
  auto got = settle([&] { return sim.run(); }, o, sim.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->settled);
  EXPECT_EQ(got->windows, 10);
  EXPECT_NEAR(got->window_gap, 0.2 / 1.2, 1e-9);  // the last three: 1.3, 1.0, 1.3
  EXPECT_EQ(got->why, "window medians were up to 17% from their mean, over +-10% after 10 windows");
  // The same runs settle when 20% is allowed.
  Simulated again;
  again.script = sim.script;
  o.tolerance = 0.2;
  got = settle([&] { return again.run(); }, o, again.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->settled);
  EXPECT_EQ(got->windows, 3);
}

TEST(Settle, OnAGpuTheShareIsNotChecked) {
  Simulated sim;
  sim.script = {{0.001, 0.05}};  // the thread waits on the device
  SettleOptions o = options();
  o.min_cpu_share = 0;
  auto got = settle([&] { return sim.run(); }, o, sim.clocks());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->settled);
}

TEST(Settle, ARunsErrorAndCancellingEndTheMeasurement) {
  Simulated sim;
  sim.script = {{0.001, 1.0}};
  int calls = 0;
  auto failing = [&]() -> Status {
    if (++calls == 4) return Error{ErrorCode::kModelError, "shape mismatch"};
    return sim.run();
  };
  auto got = settle(failing, options(), sim.clocks());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, "shape mismatch");
  auto stopped = settle([&] { return sim.run(); }, options(), sim.clocks(), [] { return true; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, ErrorCode::kCancelled);
}

}  // namespace
}  // namespace batchscope
