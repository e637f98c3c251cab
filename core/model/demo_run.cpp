// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/demo_run.h"

#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "tuning/adaptive_planner.h"

namespace batchscope {

Expected<DemoTotals> run_demo_traffic(const DemoRequest& r, const std::atomic<bool>* stop,
                                      const std::function<void(const DemoSecond&)>& each_second) {
  Engine engine(SyntheticRunner::factory(r.cost), r.options);
  engine.set_adaptive_planner(make_adaptive_plan);
  if (Status s = engine.start(); !s) return s.error();
  std::atomic<uint64_t> sent{0}, answered{0}, admitted{0};
  std::atomic<bool> stop_traffic{false};
  std::thread traffic([&] {
    std::mt19937_64 rng(r.seed);
    std::exponential_distribution<double> gap(r.rate);
    std::vector<float> x(16);
    auto next = std::chrono::steady_clock::now();
    while (!stop_traffic) {
      next += std::chrono::nanoseconds(static_cast<int64_t>(gap(rng) * 1e9));
      std::this_thread::sleep_until(next);
      for (float& v : x) v = static_cast<float>(rng() % 1000) / 10.0f;
      Tensors in;
      in.push_back(Tensor::from_floats(x));
      ++sent;
      auto id = engine.submit(std::move(in), [&](TensorResponse&&) { ++answered; });
      if (id.ok()) ++admitted;
    }
  });

  MetricsAggregator overall(std::chrono::seconds(1), 3600);
  RecordBatch records;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t sent_before = 0;
  bool retuned = false;
  for (int tick = 1; !(stop && *stop); ++tick) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(tick));
    engine.drain_records(records);
    MetricsAggregator interval(std::chrono::hours(24), 1);
    interval.fold(records);
    overall.fold(records);
    DemoSecond second{tick, interval.totals(), sent.load() - sent_before, engine.status(), {}};
    sent_before += second.sent;
    if (r.retune && !retuned && r.seconds > 0 && tick >= r.seconds / 2) {
      Options o = engine.status().options;
      o.max_wait_us = o.max_wait_us > 0 ? o.max_wait_us / 4 : 1000;
      if (engine.set_options(o)) second.retuned_wait_us = o.max_wait_us;
      retuned = true;
    }
    each_second(second);
    if (r.seconds > 0 && tick >= r.seconds) break;
  }
  stop_traffic = true;
  traffic.join();
  engine.stop(StopMode::kDrain);
  engine.drain_records(records);
  overall.fold(records);
  DemoTotals totals;
  totals.sent = sent.load();
  totals.admitted = admitted.load();
  totals.answered = answered.load();
  totals.counters = engine.status().counters;
  totals.window = overall.totals();
  // Rejections are answered too, at once.
  totals.exactly_once = totals.answered == totals.admitted + totals.counters.rejected &&
                        totals.counters.completed() == totals.admitted;
  return totals;
}

}  // namespace batchscope
