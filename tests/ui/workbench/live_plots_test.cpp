// SPDX-License-Identifier: GPL-3.0-or-later
// The live plots: how a monitor snapshot maps onto the panels (times, the
// latency fan, offered/completed/rejected rates, the batch-size histogram)
// and that the widget draws those series, with every batch as a point.

#include "ui/workbench/live_plots.h"

#include <gtest/gtest.h>

#include <cmath>

namespace batchscope {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const TimePoint kT0 = TimePoint(std::chrono::seconds(5000));

RequestRecord request(TimePoint arrival, Duration latency, Outcome o = Outcome::kOk) {
  RequestRecord r;
  r.outcome = o;
  r.times.arrival = r.times.admitted = arrival;
  r.times.batched = r.times.run_start = arrival;
  r.times.run_end = r.times.completed = arrival + latency;
  return r;
}

BatchRecord batch(TimePoint end, uint32_t size) {
  BatchRecord b;
  b.size = size;
  b.oldest_arrival = end - milliseconds(2);
  b.batched = b.run_start = end - milliseconds(1);
  b.run_end = end;
  return b;
}

// Three 100 ms windows: 10 requests of 1..10 ms in the first, 4 rejected in
// the second, nothing but a batch in the third.
RecordBatch records() {
  RecordBatch rb;
  for (int i = 1; i <= 10; ++i)
    rb.requests.push_back(request(kT0 + milliseconds(10), milliseconds(i)));
  for (int i = 0; i < 4; ++i)
    rb.requests.push_back(request(kT0 + milliseconds(150), microseconds(1), Outcome::kRejected));
  rb.batches = {batch(kT0 + milliseconds(50), 4), batch(kT0 + milliseconds(60), 6),
                batch(kT0 + milliseconds(250), 6)};
  rb.depth = {DepthSample{kT0 + milliseconds(20), 3, 7}};
  return rb;
}

MetricsSnapshot snapshot(const RecordBatch& rb) {
  MetricsAggregator agg(milliseconds(100), 100);
  agg.fold(rb);
  MetricsSnapshot s;
  s.windows.assign(agg.windows().begin(), agg.windows().end());
  s.window_length = milliseconds(100);
  s.engine.options.target_p99_ms = 7.5;
  return s;
}

TEST(PlotSeries, WindowsMapToSecondsAgoWithTheirFiguresPerSecond) {
  const PlotSeries p = plot_series(snapshot(records()), 60);
  ASSERT_EQ(p.x.size(), 3u);
  EXPECT_DOUBLE_EQ(p.x[0], -0.3);  // window starts, before the end of the newest
  EXPECT_DOUBLE_EQ(p.x[2], -0.1);
  EXPECT_NEAR(p.p50_ms[0], 5.0, 0.05);
  EXPECT_NEAR(p.max_ms[0], 10.0, 0.05);
  EXPECT_TRUE(std::isnan(p.p50_ms[1]));  // nothing completed ok there
  EXPECT_DOUBLE_EQ(p.target_ms[1], 7.5);
  EXPECT_DOUBLE_EQ(p.offered[0], 100.0);    // 10 arrivals in 0.1 s
  EXPECT_DOUBLE_EQ(p.offered[1], 40.0);     // 4 arrivals, all rejected
  EXPECT_DOUBLE_EQ(p.completed[0], 100.0);  // the ok ones finished in window 0 too
  EXPECT_DOUBLE_EQ(p.rejected[1], 40.0);
  EXPECT_DOUBLE_EQ(p.batch_mean[0], 5.0);
  EXPECT_TRUE(std::isnan(p.batch_mean[1]));
  EXPECT_DOUBLE_EQ(p.depth_max[0], 7.0);
  EXPECT_EQ(p.batch_histogram.at(4), 1u);
  EXPECT_EQ(p.batch_histogram.at(6), 2u);
}

TEST(PlotSeries, WindowsBeforeTheSpanAreLeftOut) {
  RecordBatch rb = records();
  rb.requests.push_back(request(kT0 + std::chrono::seconds(20), milliseconds(1)));
  const PlotSeries p = plot_series(snapshot(rb), 10);
  ASSERT_FALSE(p.x.empty());
  EXPECT_GE(p.x.front(), -11.0);
  EXPECT_TRUE(p.batch_histogram.empty());  // every batch was 20 s ago
}

TEST(PlotSeries, TheHistogramHoldsEveryBatchInTheSpanWhenWindowsAreBinned) {
  // One batch of 2 in each of 20 windows of 100 ms; over the last 1.1 s with
  // at most 4 points, bins hold 3 windows and the span starts inside one.
  MetricsAggregator agg(milliseconds(100), 100);
  RecordBatch rb;
  for (int w = 0; w < 20; ++w) rb.batches.push_back(batch(kT0 + milliseconds(100 * w + 50), 2));
  agg.fold(rb);
  ASSERT_EQ(agg.windows().size(), 20u);
  const PlotSeries p = plot_series(agg, 10, 1.1, 4);
  EXPECT_EQ(p.batch_histogram.at(2), 11u);  // windows 9..19
  ASSERT_FALSE(p.x.empty());
  EXPECT_NEAR(p.x[0], -1.2, 1e-9);  // the window before the span, on its own
  ASSERT_GE(p.x.size(), 2u);
  EXPECT_NEAR(p.x[1], -1.1, 1e-9);  // a bin starts where the span does
}

TEST(PlotSeries, EachStageHasItsMedianWhereRequestsWentThroughIt) {
  // Requests of the records above spend 0 in a lane's queue and their whole
  // latency in the model; a prepared one adds the preprocess stages.
  RecordBatch rb = records();
  RequestRecord r = request(kT0 + milliseconds(20), milliseconds(8));
  r.times.prepare_start = r.times.arrival + milliseconds(1);
  r.times.admitted = r.times.arrival + milliseconds(3);
  r.times.batched = r.times.run_start = r.times.arrival + milliseconds(4);
  rb.requests.push_back(r);
  const PlotSeries p = plot_series(snapshot(rb), 60);
  ASSERT_EQ(p.x.size(), 3u);
  const auto& model = p.stage_p50_ms[static_cast<int>(RunStage::kModel)];
  EXPECT_NEAR(model[0], 5.0, 0.05);  // 1..10 ms and 4 ms: the median of eleven
  EXPECT_TRUE(std::isnan(model[1]));
  EXPECT_NEAR(p.stage_p50_ms[static_cast<int>(RunStage::kPreprocess)][0], 2.0, 0.02);
  EXPECT_NEAR(p.stage_p50_ms[static_cast<int>(RunStage::kPreprocessWait)][0], 1.0, 0.01);
  EXPECT_TRUE(std::isnan(p.stage_p50_ms[static_cast<int>(RunStage::kPostprocess)][0]));

  LivePlots plots;
  plots.resize(1000, 700);
  EXPECT_TRUE(plots.draw(snapshot(records()), 1));
  EXPECT_TRUE(plots.stage_shown(RunStage::kModel));
  EXPECT_TRUE(plots.stage_shown(RunStage::kBatchWait));
  EXPECT_FALSE(plots.stage_shown(RunStage::kPreprocess));  // nothing prepared
  EXPECT_FALSE(plots.preparing_shown());
  rb.depth.push_back(DepthSample{kT0 + milliseconds(30), 2, 2, 5});
  EXPECT_TRUE(plots.draw(snapshot(rb), 10));
  EXPECT_TRUE(plots.stage_shown(RunStage::kPreprocess));
  EXPECT_FALSE(plots.stage_shown(RunStage::kPostprocess));
  EXPECT_TRUE(plots.preparing_shown());
  // Two samples in the first window, 0 and 5 being prepared.
  EXPECT_DOUBLE_EQ(plot_series(snapshot(rb), 60).preparing_mean[0], 2.5);
}

TEST(LivePlots, DrawEveryBatchAsAPointAndTheHistogramUpToTheNewestCompleteWindow) {
  LivePlots plots;
  plots.resize(1000, 700);
  const RecordBatch rb = records();
  plots.add_batches(rb);
  // 1 s over >= 50 columns: every batch its own point. The third window is
  // the newest, still filling: it is left out, and so is its batch.
  EXPECT_TRUE(plots.draw(snapshot(rb), 1));
  EXPECT_EQ(plots.plotted_windows(), 2);
  EXPECT_EQ(plots.plotted_batches(), 2);
  EXPECT_EQ(plots.batches_in_span(), 2u);
  EXPECT_DOUBLE_EQ(plots.histogram_count(6), 1.0);
  EXPECT_DOUBLE_EQ(plots.histogram_count(4), 1.0);
  EXPECT_DOUBLE_EQ(plots.histogram_count(5), 0.0);
  EXPECT_FALSE(plots.draw(snapshot(rb), 1));  // no window completed since
  EXPECT_TRUE(plots.draw(snapshot(rb), 10));  // but a new span draws
  plots.clear();
  EXPECT_EQ(plots.plotted_windows(), 0);
  EXPECT_EQ(plots.plotted_batches(), 0);
}

}  // namespace
}  // namespace batchscope
