// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/runs/run_plot.h"

// qcustomplot.h uses the Qt keywords `signals` and `foreach`; this file must
// never include torch (see DESIGN.md section 1).
#include <qcustomplot.h>

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QThread>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "ui/common/picture.h"

namespace batchscope {
namespace {

using namespace picture;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const QColor kDepthColour(0x1a, 0x7f, 0x5a);
const QColor kBatchMeanColour(0xc4, 0x4e, 0x00);
// Lane colours for batch dots; distinct from the line colours above.
const QColor kLaneColours[] = {QColor(0x6a, 0x3d, 0x9a), QColor(0x1f, 0x9e, 0x89),
                               QColor(0xd9, 0x5f, 0x02), QColor(0xe7, 0x29, 0x8a)};
constexpr int kMaxLanesShown = 4;  // beyond this one colour for all lanes

// Per-window series for step lines: keyed at each window's start, plus one
// closing point at the last window's end that repeats its value. Windows
// without the underlying data hold NaN, which QCustomPlot draws as a gap
// rather than as a misleading drop to zero.
struct WindowSeries {
  QVector<double> t, p50, p90, p99, max, depth_mean, depth_max, batch_mean;
};

WindowSeries window_series(const RunSummary& s, bool have_depth) {
  WindowSeries w;
  for (const RunWindow& win : s.windows) {
    w.t.push_back(win.start_s);
    const bool lat = win.ok > 0;
    w.p50.push_back(lat ? win.latency.p50_ms : kNaN);
    w.p90.push_back(lat ? win.latency.p90_ms : kNaN);
    w.p99.push_back(lat ? win.latency.p99_ms : kNaN);
    w.max.push_back(lat ? win.latency.max_ms : kNaN);
    w.depth_mean.push_back(have_depth ? win.depth_mean : kNaN);
    w.depth_max.push_back(have_depth ? double(win.depth_max) : kNaN);
    w.batch_mean.push_back(win.batch_max > 0 ? win.batch_mean : kNaN);
  }
  if (!s.windows.empty()) {
    const RunWindow& last = s.windows.back();
    w.t.push_back(last.start_s + last.length_s);
    for (QVector<double>* v :
         {&w.p50, &w.p90, &w.p99, &w.max, &w.depth_mean, &w.depth_max, &w.batch_mean})
      v->push_back(v->back());
  }
  return w;
}

// The last instant anything in the run happened, so all panels share one range.
double time_extent(const RunData& run, const RunSummary& s) {
  double end = s.duration_s;
  for (const RunWindow& w : s.windows) end = std::max(end, w.start_s + w.length_s);
  if (!run.batches.empty()) {
    TimePoint last{};
    for (const BatchRecord& b : run.batches) last = std::max(last, b.run_end);
    end = std::max(end, seconds_since(last, run.start));
  }
  if (!run.depth.empty()) end = std::max(end, seconds_since(run.depth.back().time, run.start));
  return end > 0 ? end : 1.0;
}

void draw_latency(QCustomPlot& plot, const Panel& p, const WindowSeries& w) {
  const double top_p99 = finite_max(w.p99);
  const double top_max = finite_max(w.max);
  if (top_max <= 0) {
    p.y->setRange(0, 1);
    p.legend->setVisible(false);
    add_note(plot, p, QStringLiteral("no completed requests"));
    return;
  }
  // The bands come first so that every line is drawn over them. Their fill
  // opacity falls from the inner band to the outer one.
  QCPGraph* band90 = plot.addGraph(p.x, p.y);
  band90->setData(w.t, w.p90, true);
  band90->setPen(Qt::NoPen);
  band90->setLineStyle(QCPGraph::lsStepLeft);
  band90->setBrush(with_alpha(kP90Colour, 120));
  QCPGraph* band99 = plot.addGraph(p.x, p.y);
  band99->setData(w.t, w.p99, true);
  band99->setPen(Qt::NoPen);
  band99->setLineStyle(QCPGraph::lsStepLeft);
  band99->setBrush(with_alpha(kP99Colour, 90));

  QCPGraph* p50 = add_line(plot, p, w.t, w.p50, pen_of(kP50Colour, 2.2), "p50", true);
  QCPGraph* p90 = add_line(plot, p, w.t, w.p90, pen_of(kP90Colour, 1.6), "p90", true);
  add_line(plot, p, w.t, w.p99, pen_of(kP99Colour.darker(115), 1.6), "p99", true);
  add_line(plot, p, w.t, w.max, pen_of(kMaxColour, 1.3, Qt::DashLine), "max", true);
  band90->setChannelFillGraph(p50);
  band99->setChannelFillGraph(p90);

  // One stall can push max far above the rest; on a linear axis that would
  // flatten the fan into the floor. Clip instead, and say so.
  double top = top_max;
  if (top_p99 > 0 && top_max > 4 * top_p99) {
    top = 4 * top_p99;
    add_corner_note(plot, p, QStringLiteral("max clipped; peak %1 ms").arg(num(top_max)));
  }
  p.y->setRange(0, top * 1.22);
}

void draw_depth(QCustomPlot& plot, const Panel& p, const WindowSeries& w, bool have_depth) {
  if (!have_depth) {
    p.y->setRange(0, 1);
    p.legend->setVisible(false);
    add_note(plot, p, QStringLiteral("no queue-depth data for this target"));
    return;
  }
  QCPGraph* mean =
      add_line(plot, p, w.t, w.depth_mean, pen_of(kDepthColour, 2.0), "mean depth", true);
  mean->setBrush(with_alpha(kDepthColour, 40));
  add_line(plot, p, w.t, w.depth_max, pen_of(kMaxColour, 1.3, Qt::DashLine), "max depth", true);
  p.y->setRange(0, std::max(1.0, finite_max(w.depth_max)) * 1.3);
}

void draw_batches(QCustomPlot& plot, const Panel& p, const RunData& run, const WindowSeries& w,
                  double x_max) {
  const uint32_t limit = run.config.options.max_batch_size;
  if (run.batches.empty()) {
    p.y->setRange(0, std::max<uint32_t>(limit, 1) * 1.3);
    p.legend->setVisible(false);
    add_note(plot, p, QStringLiteral("no batch data for this target"));
    return;
  }

  // Thin to at most kMaxBatchDots by keeping every k-th batch of each lane:
  // in time order that keeps the spread of sizes along the whole run, and
  // counting per lane keeps round-robin lanes from aliasing with k.
  const std::size_t n = run.batches.size();
  const std::size_t stride = (n + kMaxBatchDots - 1) / kMaxBatchDots;
  std::map<uint16_t, std::pair<QVector<double>, QVector<double>>> by_lane;
  std::map<uint16_t, std::size_t> seen;
  QVector<double> failed_t, failed_size;
  uint32_t biggest = 0;
  std::size_t drawn = 0;
  for (const BatchRecord& b : run.batches) {
    biggest = std::max(biggest, b.size);
    const double t = seconds_since(b.run_end, run.start);
    // Failures are rare and matter: every one is drawn, thinned or not.
    if (b.failed) {
      failed_t.push_back(t);
      failed_size.push_back(b.size);
    }
    if (seen[b.lane]++ % stride != 0) continue;
    auto& [ts, sizes] = by_lane[b.lane];
    ts.push_back(t);
    sizes.push_back(b.size);
    ++drawn;
  }
  // Dense clouds get fainter dots so that density, not overdraw, shows.
  const int alpha = drawn > 20000 ? 70 : drawn > 2000 ? 100 : drawn > 200 ? 150 : 220;
  const double dot = drawn > 2000 ? 3.5 : 5;
  const bool one_colour = by_lane.size() > std::size_t(kMaxLanesShown);
  if (stride > 1) {
    add_corner_note(plot, p,
                    QStringLiteral("showing 1 in %1 of %2 batches").arg(stride).arg(count(n)));
  }

  if (one_colour) {
    // Many lanes: one cloud, since a legend of 20 lanes helps nobody.
    QVector<double> ts, sizes;
    for (auto& [lane, data] : by_lane) {
      ts += data.first;
      sizes += data.second;
    }
    by_lane.clear();
    by_lane[0] = {ts, sizes};
  }
  int colour = 0;
  for (auto& [lane, data] : by_lane) {
    QCPGraph* g = plot.addGraph(p.x, p.y);
    g->setData(data.first, data.second, false);
    g->setLineStyle(QCPGraph::lsNone);
    const QColor c = with_alpha(kLaneColours[colour++ % kMaxLanesShown], alpha);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, c, dot));
    QString name = one_colour           ? QStringLiteral("batches, all lanes")
                   : by_lane.size() > 1 ? QStringLiteral("batches, lane %1").arg(lane)
                                        : QStringLiteral("batches");
    g->setName(name);
    g->addToLegend(p.legend);
  }
  add_line(plot, p, w.t, w.batch_mean, pen_of(kBatchMeanColour, 2.4), QStringLiteral("window mean"),
           true);
  // Failed batches last, so that no dot or line hides them.
  if (!failed_t.isEmpty()) {
    QCPGraph* g = plot.addGraph(p.x, p.y);
    g->setData(failed_t, failed_size, false);
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCross, QPen(kLimitColour, 2), Qt::NoBrush, 10));
    g->setName(QStringLiteral("failed batches"));
    g->addToLegend(p.legend);
  }

  if (limit > 0) {
    // The cap in force when the run began; retuning may have moved it since.
    add_line(plot, p, {0, x_max}, {double(limit), double(limit)},
             pen_of(kLimitColour, 1.2, Qt::DashLine),
             QStringLiteral("max batch size at start (%1)").arg(limit), false);
  }
  p.y->setRange(0, std::max({double(biggest), double(limit), 1.0}) * 1.3);
  p.y->setLabel(QStringLiteral("batch size (requests)"));
}

QString title_text(const RunData& run) {
  QString t = QStringLiteral("Run: %1  \u2192  %2")
                  .arg(QString::fromStdString(run.config.pattern.empty() ? "(no pattern)"
                                                                         : run.config.pattern),
                       QString::fromStdString(run.config.target.empty() ? "(no target)"
                                                                        : run.config.target));
  if (!run.config.model.empty())
    t += QStringLiteral("  \u00b7  model %1").arg(QString::fromStdString(run.config.model));
  return t;
}

QString headline_text(const RunSummary& s) {
  const QString sep = QStringLiteral("   \u00b7   ");
  QString t = QStringLiteral("throughput %1 req/s").arg(num(s.throughput_rps));
  t += sep + QStringLiteral("latency p50 %1 ms, p99 %2 ms, max %3 ms")
                 .arg(num(s.latency.p50_ms), num(s.latency.p99_ms), num(s.latency.max_ms));
  t += sep + QStringLiteral("ok %1 of %2 sent").arg(count(s.ok), count(s.sent));
  if (s.rejected + s.timed_out + s.errors > 0)
    t += QStringLiteral(" (rejected %1, timed out %2, errors %3)")
             .arg(count(s.rejected), count(s.timed_out), count(s.errors));
  t += sep + QStringLiteral("%1 s").arg(num(s.duration_s));
  return t;
}

QString options_text(const RunData& run, const RunSummary& s) {
  // Options only describe the server when this process ran it.
  const std::string& target = run.config.target;
  QString t;
  if (target == "inproc" || target == "self-http")
    t = QString::fromStdString(describe(run.config.options));
  if (!s.windows.empty()) {
    if (!t.isEmpty()) t += QStringLiteral("   \u00b7   ");
    t += QStringLiteral("windows of %1 s").arg(num(s.windows.front().length_s));
  }
  return t;
}

void draw(QCustomPlot& plot, const RunData& run, const RunSummary& s) {
  plot.setBackground(Qt::white);
  plot.setAutoAddPlottableToLegend(false);
  plot.setAntialiasedElements(QCP::aeAll);
  plot.setNotAntialiasedElements(QCP::aeAxes | QCP::aeGrid);
  plot.plotLayout()->clear();  // drops the default axis rect and legend

  // Outer layout: title rows, then a grid with the three panels. The nesting
  // keeps the panels' stretch factors independent of the text rows.
  QCPLayoutGrid* outer = plot.plotLayout();
  outer->setRowSpacing(0);
  auto* title = new QCPTextElement(&plot, title_text(run), font_of(15, true));
  outer->addElement(0, 0, title);
  auto* headline = new QCPTextElement(&plot, headline_text(s), font_of(11));
  outer->addElement(1, 0, headline);
  const QString options = options_text(run, s);
  int row = 2;
  if (!options.isEmpty()) {
    auto* opts = new QCPTextElement(&plot, options, font_of(9));
    opts->setTextColor(kNoteColour);
    outer->addElement(row++, 0, opts);
  }
  auto* panels = new QCPLayoutGrid;
  outer->addElement(row, 0, panels);
  for (int r = 0; r < row; ++r) outer->setRowStretchFactor(r, 0.001);
  outer->setRowStretchFactor(row, 1);
  panels->setRowSpacing(4);

  const double x_max = time_extent(run, s);
  const bool have_depth = !run.depth.empty();
  const WindowSeries w = window_series(s, have_depth);
  auto* margins = new QCPMarginGroup(&plot);
  const Panel latency =
      make_panel(plot, panels, 0, margins, QStringLiteral("latency (ms)"), x_max, false);
  const Panel depth =
      make_panel(plot, panels, 1, margins, QStringLiteral("queue depth (requests)"), x_max, false);
  const Panel batches =
      make_panel(plot, panels, 2, margins, QStringLiteral("batch size (requests)"), x_max, true);
  // The latency fan gets the most room; queue depth needs the least.
  panels->setRowStretchFactor(0, 1.3);
  panels->setRowStretchFactor(1, 0.8);
  panels->setRowStretchFactor(2, 1.0);

  draw_latency(plot, latency, w);
  draw_depth(plot, depth, w, have_depth);
  draw_batches(plot, batches, run, w, x_max);
}

}  // namespace

std::pair<double, double> draw_fan_overlay(QCustomPlot& plot, const std::vector<FanRun>& runs) {
  static const QColor kColours[] = {QColor(0x1f, 0x5f, 0xbf), QColor(0xd9, 0x60, 0x0b),
                                    QColor(0x2a, 0x9d, 0x4b), QColor(0x9b, 0x3f, 0xb5)};
  constexpr double kGap = std::numeric_limits<double>::quiet_NaN();
  double x_max = 0, y_max = 0;
  size_t colour = 0;
  for (const FanRun& r : runs) {
    const QString name = QString::fromStdString(r.name);
    // Step lines over the windows, closed at the last window's end; windows
    // without an answer are gaps, not zeros.
    QVector<double> t, p50, p90, p99;
    for (const RunWindow& w : r.summary->windows) {
      t << w.start_s;
      p50 << (w.ok ? w.latency.p50_ms : kGap);
      p90 << (w.ok ? w.latency.p90_ms : kGap);
      p99 << (w.ok ? w.latency.p99_ms : kGap);
      if (w.ok) y_max = std::max(y_max, w.latency.p99_ms);
    }
    if (!r.summary->windows.empty()) {
      const RunWindow& last = r.summary->windows.back();
      t << last.start_s + last.length_s;
      p50 << p50.back();
      p90 << p90.back();
      p99 << p99.back();
      x_max = std::max(x_max, t.back());
    }
    const QColor c = kColours[colour++ % std::size(kColours)];
    QColor band = c;
    band.setAlpha(55);
    QColor edge = c;
    edge.setAlpha(110);
    QCPGraph* upper = plot.addGraph();
    upper->setData(t, p99, true);
    upper->setLineStyle(QCPGraph::lsStepLeft);
    upper->setPen(QPen(edge, 1));
    upper->setName(name + " p99");
    upper->removeFromLegend();
    QCPGraph* lower = plot.addGraph();
    lower->setData(t, p90, true);
    lower->setLineStyle(QCPGraph::lsStepLeft);
    lower->setPen(QPen(edge, 1));
    lower->setBrush(band);
    lower->setChannelFillGraph(upper);
    lower->setName(name + " p90–p99");
    QCPGraph* median = plot.addGraph();
    median->setData(t, p50, true);
    median->setLineStyle(QCPGraph::lsStepLeft);
    median->setPen(QPen(c, 2.2));
    median->setName(name + " p50");
  }
  return {x_max, y_max};
}

Status write_fan_overlay(const std::vector<FanRun>& runs, const std::string& title,
                         const std::string& png_path, int width, int height) {
  return picture::save_png(png_path, width, height, "comparison plot", [&](QCustomPlot& plot) {
    const auto [x_max, y_max] = draw_fan_overlay(plot, runs);
    plot.xAxis->setLabel("time since run start (s)");
    plot.yAxis->setLabel("latency (ms)");
    plot.xAxis->setRange(0, x_max > 0 ? x_max : 1);
    plot.yAxis->setRange(0, y_max > 0 ? y_max * 1.15 : 1);
    plot.plotLayout()->insertRow(0);
    plot.plotLayout()->addElement(
        0, 0,
        new QCPTextElement(&plot, QString::fromStdString(title), QFont("sans", 11, QFont::Bold)));
    plot.legend->setVisible(true);
    plot.legend->setFont(QFont("sans", 9));
    plot.axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  });
}

Status write_run_plot(const RunData& run, const RunSummary& summary, const std::string& png_path,
                      int width, int height) {
  return picture::save_png(png_path, width, height, "run plot",
                           [&](QCustomPlot& plot) { draw(plot, run, summary); });
}

Expected<QImage> render_run_plot(const RunData& run, const RunSummary& summary, int width,
                                 int height) {
  return picture::render(width, height, "run plot",
                         [&](QCustomPlot& plot) { draw(plot, run, summary); });
}

}  // namespace batchscope
