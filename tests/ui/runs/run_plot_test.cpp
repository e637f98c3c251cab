// SPDX-License-Identifier: GPL-3.0-or-later
// write_run_plot(): the PNG exists, has the asked-for size and shows drawn
// content, for runs with and without batch records; bad paths and sizes give
// errors that say what was wrong. Pixel checks are coarse on purpose: they
// catch a blank or broken picture, not a changed font.
#include "ui/runs/run_plot.h"

#include <gtest/gtest.h>

#include <QColor>
#include <QImage>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

namespace batchscope {
namespace {

using std::chrono::duration_cast;

TimePoint at(TimePoint start, double seconds) {
  return start + duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

// About 4,000 requests over 5 s on one lane: the rate ramps up, a burst at
// 3 s backs the queue up, so latency, depth and batch sizes all move.
RunData make_run(bool with_engine_records) {
  RunData run;
  run.config.pattern = "ramp 400..1200 rps + burst";
  run.config.target = with_engine_records ? "inproc" : "http://example.com/v1/infer";
  run.config.model = with_engine_records ? "synthetic" : "";
  run.config.duration_s = 5;
  run.config.seed = 7;
  run.config.options.max_batch_size = 32;
  run.start = TimePoint(std::chrono::seconds(1000));

  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(1.0);
  std::vector<double> arrivals;
  for (double t = 0; t < 5.0;) {
    double rate = 400 + 160 * t;          // 400 -> 1200 per second
    if (t > 3.0 && t < 3.3) rate = 4000;  // a burst
    t += gap(rng) / rate;
    if (t < 5.0) arrivals.push_back(t);
  }

  // One lane: a batch takes the queue (up to 32) when the lane is free and
  // runs 1 ms + 0.15 ms per request; the burst makes a backlog.
  std::size_t next = 0;
  double lane_free = 0;
  uint64_t batch_id = 1;
  std::vector<double> done(arrivals.size(), 0);
  while (next < arrivals.size()) {
    const double begin = std::max(lane_free, arrivals[next] + 0.002);
    std::size_t end = next;
    while (end < arrivals.size() && arrivals[end] <= begin && end - next < 32) ++end;
    const uint32_t size = uint32_t(end - next);
    const double run_time = 0.001 + 0.00015 * size;
    BatchRecord b;
    b.id = batch_id;
    b.size = size;
    b.reason = size == 32 ? BatchReason::kFull : BatchReason::kTimeout;
    b.oldest_arrival = at(run.start, arrivals[next]);
    b.batched = at(run.start, begin);
    b.run_start = at(run.start, begin);
    b.run_end = at(run.start, begin + run_time);
    b.failed = batch_id == 400;  // one failed batch, drawn as a cross
    if (with_engine_records) run.batches.push_back(b);
    for (std::size_t i = next; i < end; ++i) {
      RunRequest r;
      r.index = i;
      r.intended = at(run.start, arrivals[i]);
      r.sent = r.intended;
      r.done = at(run.start, begin + run_time + 0.0002);
      r.outcome = b.failed ? Outcome::kModelError : Outcome::kOk;
      r.batch_id = with_engine_records ? batch_id : 0;
      r.batch_size = with_engine_records ? size : 0;
      r.http_status = with_engine_records ? 0 : 200;
      run.requests.push_back(r);
    }
    lane_free = begin + run_time;
    next = end;
    ++batch_id;
  }
  if (with_engine_records) {
    // Depth every 10 ms: requests that arrived but whose batch had not started.
    for (double t = 0; t < 5.0; t += 0.01) {
      DepthSample d;
      d.time = at(run.start, t);
      uint32_t waiting = 0;
      for (const RunRequest& r : run.requests) {
        const double arrived = std::chrono::duration<double>(r.intended - run.start).count();
        const double left = std::chrono::duration<double>(r.done - run.start).count() - 0.002;
        if (arrived <= t && left > t) ++waiting;
      }
      d.depth = waiting;
      d.peak = waiting;
      run.depth.push_back(d);
    }
  }
  return run;
}

struct PixelStats {
  std::size_t distinct_colours = 0;
  double non_white_fraction = 0;
};

PixelStats stats_of(const QImage& image) {
  std::set<QRgb> colours;
  std::size_t non_white = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const QRgb p = image.pixel(x, y) | 0xff000000u;
      colours.insert(p);
      if (qRed(p) < 245 || qGreen(p) < 245 || qBlue(p) < 245) ++non_white;
    }
  }
  return {colours.size(), double(non_white) / (double(image.width()) * image.height())};
}

// Pixels within `tolerance` of `colour` in every channel.
std::size_t pixels_near(const QImage& image, QColor colour, int tolerance = 12) {
  std::size_t n = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const QRgb p = image.pixel(x, y);
      if (std::abs(qRed(p) - colour.red()) <= tolerance &&
          std::abs(qGreen(p) - colour.green()) <= tolerance &&
          std::abs(qBlue(p) - colour.blue()) <= tolerance)
        ++n;
    }
  }
  return n;
}

class RunPlotTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.isValid()); }
  std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
  QTemporaryDir dir_;
};

TEST_F(RunPlotTest, WritesPngOfRequestedSizeWithContent) {
  const RunData run = make_run(true);
  ASSERT_GT(run.requests.size(), 2500u);
  const RunSummary summary = summarize_run(run);
  const std::string png = path("run.png");
  const Status st = write_run_plot(run, summary, png, 1400, 1000);
  ASSERT_TRUE(st.ok()) << st.message();

  QImage image(QString::fromStdString(png));
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.width(), 1400);
  EXPECT_EQ(image.height(), 1000);
  const PixelStats s = stats_of(image);
  EXPECT_GT(s.distinct_colours, 200u);
  EXPECT_GT(s.non_white_fraction, 0.03);
  EXPECT_LT(s.non_white_fraction, 0.6);
  // Each panel drew something in its own colour: the p50 line, the depth
  // line and the batch dots (lane 0) / batch mean line.
  EXPECT_GT(pixels_near(image, QColor(0x0b, 0x3d, 0x91)), 300u);
  EXPECT_GT(pixels_near(image, QColor(0x1a, 0x7f, 0x5a)), 300u);
  EXPECT_GT(pixels_near(image, QColor(0xc4, 0x4e, 0x00)), 300u);
}

TEST_F(RunPlotTest, HonoursOtherSizes) {
  const RunData run = make_run(true);
  const std::string png = path("small.png");
  ASSERT_TRUE(write_run_plot(run, summarize_run(run), png, 800, 640).ok());
  QImage image(QString::fromStdString(png));
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(800, 640));
}

TEST_F(RunPlotTest, UnwritablePathGivesErrorNamingIt) {
  const RunData run = make_run(true);
  const RunSummary summary = summarize_run(run);

  const std::string missing = path("no/such/dir/run.png");
  Status st = write_run_plot(run, summary, missing);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("directory does not exist"), std::string::npos) << st.message();

  // A directory where the file should go.
  const std::string is_dir = path("");
  st = write_run_plot(run, summary, is_dir);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot write run plot"), std::string::npos) << st.message();
}

TEST_F(RunPlotTest, RejectsSillySizes) {
  const RunData run = make_run(true);
  const Status st = write_run_plot(run, summarize_run(run), path("tiny.png"), 10, 1000);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("10x1000"), std::string::npos) << st.message();
}

TEST_F(RunPlotTest, RunWithoutBatchesStillRenders) {
  const RunData run = make_run(false);
  ASSERT_TRUE(run.batches.empty());
  ASSERT_TRUE(run.depth.empty());
  const std::string png = path("http.png");
  const Status st = write_run_plot(run, summarize_run(run), png);
  ASSERT_TRUE(st.ok()) << st.message();
  QImage image(QString::fromStdString(png));
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.size(), QSize(1400, 1000));
  const PixelStats s = stats_of(image);
  EXPECT_GT(s.distinct_colours, 100u);
  EXPECT_GT(s.non_white_fraction, 0.01);
  EXPECT_GT(pixels_near(image, QColor(0x0b, 0x3d, 0x91)), 300u);   // the latency fan
  EXPECT_EQ(pixels_near(image, QColor(0x6a, 0x3d, 0x9a), 6), 0u);  // no batch dots
}

TEST_F(RunPlotTest, EmptyRunRenders) {
  RunData run;
  run.config.pattern = "constant rate=0";
  run.config.target = "inproc";
  const std::string png = path("empty.png");
  const Status st = write_run_plot(run, summarize_run(run), png, 600, 400);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(QImage(QString::fromStdString(png)).size(), QSize(600, 400));
}

TEST_F(RunPlotTest, ThinsVeryManyBatches) {
  // 120k batches over 60 s: drawn as every 3rd, and still a valid picture.
  RunData run;
  run.config.pattern = "constant";
  run.config.target = "inproc";
  run.start = TimePoint(std::chrono::seconds(50));
  for (uint64_t i = 0; i < 120000; ++i) {
    BatchRecord b;
    b.id = i + 1;
    b.size = uint32_t(1 + (i * 7919) % 32);
    b.lane = uint16_t(i % 2);
    b.run_end = at(run.start, double(i) * 0.0005);
    run.batches.push_back(b);
  }
  const std::string png = path("many.png");
  const Status st = write_run_plot(run, summarize_run(run), png);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(QImage(QString::fromStdString(png)).isNull());
}

}  // namespace
}  // namespace batchscope
