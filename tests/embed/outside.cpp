// SPDX-License-Identifier: GPL-3.0-or-later
// A program built outside the tree, as docs/engine.md says one is: compiled
// with -I core alone, linked with lib/libbatchscope_engine.a and -pthread.
// Batches a function under fifo and under adaptive (with the planner from
// core/tuning), from two threads, and checks every answer.
#include <cstdio>
#include <thread>
#include <vector>

#include "batched_fn.h"
#include "tuning/adaptive_planner.h"

using batchscope::BatchedFn;
using batchscope::Options;
using batchscope::StrategyKind;

static int check(BatchedFn<int, int>& fn, const char* what) {
  int bad = 0;
  auto caller = [&](int from) {
    std::vector<batchscope::Future<batchscope::Expected<int>>> answers;
    for (int i = from; i < from + 2000; ++i) answers.push_back(fn.call(i));
    for (int i = from; i < from + 2000; ++i) {
      auto r = answers[i - from].get();
      if (!r || *r != 2 * i + 1) ++bad;
    }
  };
  std::thread a(caller, 0), b(caller, 100000);
  a.join();
  b.join();
  std::printf("%s: %d wrong of 4000\n", what, bad);
  return bad;
}

int main() {
  auto twice_plus_one = [](std::span<int> in) {
    std::vector<int> out;
    for (int x : in) out.push_back(2 * x + 1);
    return out;
  };
  // Room in the queue for all 4000 calls, which are made before any answer is read.
  const Options o{.max_batch_size = 16, .max_wait_us = 200, .queue_capacity = 8192};
  BatchedFn<int, int> fifo(twice_plus_one, o);
  Options adaptive = o;
  adaptive.strategy = StrategyKind::kAdaptive;
  BatchedFn<int, int> planned(twice_plus_one, adaptive, nullptr, batchscope::make_adaptive_plan);
  return check(fifo, "fifo") + check(planned, "adaptive") == 0 ? 0 : 1;
}
