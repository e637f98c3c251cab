// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation view's live plots: five panels sharing the time axis
// (seconds ago) — the time-to-first-token fan (p50/p90/p99), the inter-token
// latency fan, tokens per second (output and prefill), sequences running and
// waiting (mean per window, and the peak), and cache blocks in use against
// the pool. gen_plot_series() is the mapping from GenMetrics windows to
// points without the widget, so it can be tested on its own. One point per
// window; the newest window (still filling) is left out.
// Thread-safety: GUI thread only.

#include <QWidget>
#include <deque>
#include <vector>

#include "generation/gen_metrics.h"

class QCustomPlot;
class QCPGraph;
class QCPAxisRect;

namespace batchscope {

// x in seconds before the end of the newest window drawn (a window's start);
// NaN where a window has nothing to show (no finished request, no step).
struct GenPlotSeries {
  std::vector<double> x;
  std::vector<double> ttft_p50_ms, ttft_p90_ms, ttft_p99_ms;
  std::vector<double> itl_p50_ms, itl_p90_ms, itl_p99_ms;
  std::vector<double> output_tps, prefill_tps;  // tokens per second
  std::vector<double> running_mean, running_max, waiting_mean;
  std::vector<double> blocks_used, blocks_total;
  TimePoint newest{};
};

GenPlotSeries gen_plot_series(const std::deque<GenWindow>& windows, double span_s,
                              size_t skip_newest = 1);

class GenPlots : public QWidget {
 public:
  explicit GenPlots(QWidget* parent = nullptr);

  // Maps the metrics' windows over the last `span_s` seconds onto the panels
  // and repaints; only when a window has completed since the last draw (or
  // after clear()). Returns whether it drew.
  bool draw(const GenMetrics& m, double span_s);
  void clear();

  QCustomPlot* plot() const { return plot_; }
  // Points with a value in the TTFT p50 line, the ITL p50 line and the
  // output tokens/s line.
  int ttft_points() const;
  int itl_points() const;
  int throughput_points() const;

 private:
  void make_panels();
  void hover(const QPoint& pos, const QPoint& global);

  QCustomPlot* plot_ = nullptr;
  QCPAxisRect *ttft_ = nullptr, *itl_ = nullptr, *tps_ = nullptr, *seqs_ = nullptr,
              *cache_ = nullptr;
  QCPGraph *ttft50_ = nullptr, *ttft90_ = nullptr, *ttft99_ = nullptr;
  QCPGraph *itl50_ = nullptr, *itl90_ = nullptr, *itl99_ = nullptr;
  QCPGraph *out_tps_ = nullptr, *prefill_tps_ = nullptr;
  QCPGraph *running_ = nullptr, *running_max_ = nullptr, *waiting_ = nullptr;
  QCPGraph *blocks_ = nullptr, *blocks_total_ = nullptr;
  TimePoint drawn_newest_{};
  bool dirty_ = true;
};

}  // namespace batchscope
