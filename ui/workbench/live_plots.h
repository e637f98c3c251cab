// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The workbench's live plots: four panels sharing the time axis (seconds
// ago) — the latency fan p50/p90/p99/max with the p99 target and the
// median of each stage a request went through (run_stages.h); queue depth;
// batch sizes (every batch as a point, the mean per window, and a histogram
// over the span beside it); offered, completed and rejected requests per
// second. draw() maps one monitor snapshot plus the batches drained since
// the last one onto the panels; plot_series() is that mapping without the
// widget, so it can be tested on its own. Hovering reads out exact values.
// Thread-safety: GUI thread only.

#include <QWidget>
#include <array>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "batching/monitor.h"
#include "runs/records.h"
#include "runs/run_stages.h"

class QCustomPlot;
class QCPGraph;
class QCPBars;
class QCPAxisRect;

namespace batchscope {

// What the panels draw for one snapshot: one entry per bin of windows in the
// span, x in seconds before the end of the newest window (the bin's start);
// NaN where a bin has nothing to show (no completed request, no batch, no
// depth sample). Windows are binned so that there are at most `max_points`
// entries: a bin merges k consecutive windows (aligned to multiples of k
// since the epoch, so bins do not shift as time moves; the window before the
// span is a bin of its own), and its quantiles are those of the merged
// histogram, not an average of per-window figures.
struct PlotSeries {
  std::vector<double> x;
  std::vector<double> p50_ms, p90_ms, p99_ms, max_ms, target_ms;
  // Each stage's median, indexed by RunStage; NaN where no request went
  // through it.
  std::array<std::vector<double>, kRunStageCount> stage_p50_ms;
  std::vector<double> depth_mean, depth_max;
  std::vector<double> preparing_mean;  // requests in a preprocess pool, not yet queued
  std::vector<double> batch_mean;
  std::vector<double> padding_pct;  // padding waste in %; NaN where lengths do not vary
  std::vector<double> offered, completed, rejected;  // requests per second
  std::map<uint32_t, uint64_t> batch_histogram;      // size -> batches in the span
  TimePoint newest{};                                // end of the newest window
};

// One bin's figures, kept between ticks: a bin whose windows' counts have
// not changed since is not merged again.
struct PlotBin {
  uint64_t fingerprint = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  std::array<double, kRunStageCount> stage_p50_ms{};
  double depth_mean = 0, depth_max = 0, preparing_mean = 0, batch_mean = 0, padding_pct = 0;
  double offered = 0, completed = 0, rejected = 0;
  std::vector<std::pair<uint32_t, uint64_t>> sizes;  // batch size -> batches
};
class PlotBinCache {
 public:
  const PlotBin* find(int64_t key) const {
    auto it = bins_.find(key);
    return it == bins_.end() ? nullptr : &it->second;
  }
  void store(int64_t key, PlotBin bin) { bins_[key] = std::move(bin); }
  size_t size() const { return bins_.size(); }

 private:
  std::unordered_map<int64_t, PlotBin> bins_;
};

// `cache`, when given, holds the bins of the previous call and is replaced
// by this call's. The newest `skip_newest` windows are left out.
PlotSeries plot_series(const MetricsSnapshot& s, double span_s, size_t max_points = 600,
                       PlotBinCache* cache = nullptr, size_t skip_newest = 0);
// The same over an aggregator's kept windows, without copying them.
PlotSeries plot_series(const MetricsAggregator& a, double target_p99_ms, double span_s,
                       size_t max_points = 600, PlotBinCache* cache = nullptr,
                       size_t skip_newest = 0);

class LivePlots : public QWidget {
 public:
  explicit LivePlots(QWidget* parent = nullptr);

  // Keeps the batches in `drained` as points (the last 5 minutes of them).
  void add_batches(const RecordBatch& drained);
  // Maps `s` onto the panels over the last `span_s` seconds and repaints,
  // leaving out the newest window (still filling). Draws only when a window
  // has completed since the last draw, the span changed, or after clear();
  // returns whether it drew.
  bool draw(const MetricsSnapshot& s, double span_s);
  // The same from the monitor's aggregator (no copy of its windows), with
  // the options in force for the target line and the histogram's range.
  bool draw(const MetricsAggregator& a, const Options& in_force, double span_s);
  // Makes the next draw() draw even if no window completed since.
  void invalidate() { dirty_ = true; }
  // Forgets every point (a new engine, a new model).
  void clear();
  bool save_png(const QString& path);

  QCustomPlot* plot() const { return plot_; }
  int plotted_windows() const;   // points in the p50 line
  bool preparing_shown() const;  // the line of requests being prepared
  // Whether a stage's median line is shown (some request in the span went
  // through it).
  bool stage_shown(RunStage s) const;
  int plotted_batches() const;       // points drawn: one per size per pixel column
  uint64_t batches_in_span() const;  // batches those points stand for
  double histogram_count(uint32_t size) const;

 private:
  void make_panels();
  template <class Windows, class Map>
  bool draw_windows(const Windows& windows, const Options& in_force, double span_s, Map map);
  void show_series(const PlotSeries& p, const Options& in_force, double span_s);
  void hover(const QPoint& pos, const QPoint& global);

  QCustomPlot* plot_ = nullptr;
  QCPAxisRect *lat_ = nullptr, *depth_ = nullptr, *batch_ = nullptr, *hist_ = nullptr,
              *tput_ = nullptr;
  QCPGraph *p50_ = nullptr, *p90_ = nullptr, *p99_ = nullptr, *max_ = nullptr, *target_ = nullptr;
  std::array<QCPGraph*, kRunStageCount> stages_{};  // shown where a request went through it
  QCPGraph *depth_mean_ = nullptr, *depth_max_ = nullptr, *preparing_ = nullptr;
  QCPGraph *batch_points_ = nullptr, *batch_mean_ = nullptr, *padding_ = nullptr;
  QCPBars* histogram_ = nullptr;
  QCPGraph *offered_ = nullptr, *completed_ = nullptr, *rejected_ = nullptr;

  struct BatchPoint {
    TimePoint at;
    uint32_t size;
  };
  std::deque<BatchPoint> batches_;  // oldest first, sorted by time
  uint64_t batches_in_span_ = 0;
  PlotBinCache cache_;
  TimePoint drawn_newest_{};  // start of the newest window drawn
  double drawn_span_ = 0;
  bool dirty_ = true;
};

}  // namespace batchscope
