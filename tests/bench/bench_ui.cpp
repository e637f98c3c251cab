// SPDX-License-Identifier: GPL-3.0-or-later
// Repaint cost of the workbench's live plots with five minutes of history:
// 3,000 windows of 100 ms (each with ~150 requests, ~30 batches and depth
// samples) and every batch as a point (90,000), at the 5-minute span. One
// iteration is what a refresh tick does to the plots: map the snapshot and
// redraw (replot immediately, offscreen). Target: <= 10 ms per tick.
// Run: build/bin/bench_ui (QT_QPA_PLATFORM defaults to offscreen).

#include <benchmark/benchmark.h>

#include <QApplication>
#include <random>

#include <qcustomplot.h>

#include "ui/workbench/live_plots.h"

namespace batchscope {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

struct History {
  MetricsSnapshot snapshot;
  RecordBatch records;
};

History five_minutes() {
  History h;
  MetricsAggregator agg(milliseconds(100), 3000);
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency_us(std::log(1500.0), 0.5);
  std::uniform_int_distribution<uint32_t> size(1, 32);
  const TimePoint t0 = TimePoint(std::chrono::seconds(100000));
  for (int w = 0; w < 3000; ++w) {
    RecordBatch rb;
    const TimePoint start = t0 + milliseconds(100) * w;
    for (int i = 0; i < 150; ++i) {
      RequestRecord r;
      r.times.arrival = r.times.admitted = start + microseconds(i * 600);
      r.times.batched = r.times.run_start = r.times.arrival + microseconds(200);
      r.times.run_end = r.times.completed =
          r.times.arrival + microseconds(static_cast<int64_t>(latency_us(rng)));
      rb.requests.push_back(r);
    }
    for (int b = 0; b < 30; ++b) {
      BatchRecord br;
      br.size = size(rng);
      br.oldest_arrival = start + microseconds(b * 3000);
      br.batched = br.run_start = br.oldest_arrival + microseconds(500);
      br.run_end = br.run_start + microseconds(1000);
      rb.batches.push_back(br);
      h.records.batches.push_back(br);
    }
    for (int d = 0; d < 10; ++d)
      rb.depth.push_back(DepthSample{start + milliseconds(d * 10), size(rng), size(rng) + 5});
    agg.fold(rb);
  }
  h.snapshot.windows.assign(agg.windows().begin(), agg.windows().end());
  h.snapshot.window_length = milliseconds(100);
  return h;
}

void PlotSeriesFiveMinutes(benchmark::State& state) {
  const History h = five_minutes();
  for (auto _ : state) benchmark::DoNotOptimize(plot_series(h.snapshot, 300));
}
BENCHMARK(PlotSeriesFiveMinutes)->Unit(benchmark::kMillisecond);

void RepaintTickFiveMinutes(benchmark::State& state) {
  const History h = five_minutes();
  LivePlots plots;
  plots.resize(1100, 760);
  plots.show();
  plots.add_batches(h.records);
  for (auto _ : state) {
    plots.invalidate();  // as if a window had just completed
    plots.draw(h.snapshot, static_cast<double>(state.range(0)));
    plots.plot()->replot(QCustomPlot::rpImmediateRefresh);
  }
  state.counters["batches"] = static_cast<double>(plots.batches_in_span());
  state.counters["points_drawn"] = plots.plotted_batches();
  state.counters["windows"] = plots.plotted_windows();
}
BENCHMARK(RepaintTickFiveMinutes)->Arg(300)->Arg(60)->Arg(10)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace batchscope

namespace batchscope {
namespace {
void ReplotOnly(benchmark::State& state) {
  const History h = five_minutes();
  LivePlots plots;
  plots.resize(1100, 760);
  plots.show();
  if (state.range(0)) plots.add_batches(h.records);
  plots.draw(h.snapshot, 10);
  for (auto _ : state) plots.plot()->replot(QCustomPlot::rpImmediateRefresh);
}
BENCHMARK(ReplotOnly)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
}  // namespace
}  // namespace batchscope

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
