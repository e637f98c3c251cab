// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/generation/gen_run_plot.h"

// qcustomplot.h uses the Qt keywords `signals` and `foreach`; this file must
// never include torch (see DESIGN.md section 1).
#include <qcustomplot.h>

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "runs/histogram.h"
#include "ui/common/picture.h"

namespace batchscope {
namespace {

using namespace picture;

// Colours beside the shared palette, as run_plot.cpp's depth and batch lines.
const QColor kTokensColour(0x1a, 0x7f, 0x5a);
const QColor kRunningColour(0xc4, 0x4e, 0x00);
const QColor kDecodesColour(0x6a, 0x3d, 0x9a);

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// Per-window figures keyed at each window's start, plus a closing point at
// the last window's end; NaN where a window has no data (drawn as a gap).
struct Windows {
  double length = 1;
  QVector<double> t;
  QVector<double> ttft[3], itl[3], tokens_per_s;
};

Windows make_windows(const GenRun& run, double x_max) {
  Windows w;
  w.length = std::clamp(x_max / 40, 0.1, 10.0);
  const std::size_t n = std::max<std::size_t>(1, std::size_t(std::ceil(x_max / w.length)));
  std::vector<LogHistogram> ttft(n), itl(n);
  std::vector<uint64_t> tokens(n, 0);
  auto window_of = [&](TimePoint t) {
    const double s = std::max(0.0, seconds_since(t, run.start));
    return std::min(n - 1, std::size_t(s / w.length));
  };
  for (const GenRequestResult& r : run.requests) {
    if (r.first == kNever) continue;
    ttft[window_of(r.first)].record(r.first - (run.start + r.intended));
    ++tokens[window_of(r.first)];
    TimePoint at = r.first;
    for (Duration gap : r.gaps) {
      at += gap;
      const std::size_t i = window_of(at);
      itl[i].record(gap);
      ++tokens[i];
    }
  }
  const double qs[3] = {0.5, 0.9, 0.99};
  for (std::size_t i = 0; i < n; ++i) {
    const double start = double(i) * w.length;
    w.t.push_back(start);
    for (int q = 0; q < 3; ++q) {
      w.ttft[q].push_back(ttft[i].empty() ? kNoValue : double(ttft[i].quantile(qs[q])) / 1e6);
      w.itl[q].push_back(itl[i].empty() ? kNoValue : double(itl[i].quantile(qs[q])) / 1e6);
    }
    const double len = std::max(1e-3, std::min(w.length, x_max - start));
    w.tokens_per_s.push_back(double(tokens[i]) / len);
  }
  w.t.push_back(std::min(double(n) * w.length, x_max));
  for (QVector<double>* v :
       {&w.ttft[0], &w.ttft[1], &w.ttft[2], &w.itl[0], &w.itl[1], &w.itl[2], &w.tokens_per_s})
    v->push_back(v->back());
  return w;
}

void draw_fan(QCustomPlot& plot, const Panel& p, const QVector<double>& t,
              const QVector<double> (&fan)[3], const QString& empty_note) {
  if (finite_max(fan[2]) <= 0) {
    add_note(plot, p, empty_note);
    p.y->setRange(0, 1);
    p.legend->setVisible(false);
    return;
  }
  QCPGraph* band90 = plot.addGraph(p.x, p.y);
  band90->setData(t, fan[1], true);
  band90->setPen(Qt::NoPen);
  band90->setLineStyle(QCPGraph::lsStepLeft);
  band90->setBrush(with_alpha(kP90Colour, 120));
  QCPGraph* band99 = plot.addGraph(p.x, p.y);
  band99->setData(t, fan[2], true);
  band99->setPen(Qt::NoPen);
  band99->setLineStyle(QCPGraph::lsStepLeft);
  band99->setBrush(with_alpha(kP99Colour, 90));
  QCPGraph* p50 = add_line(plot, p, t, fan[0], pen_of(kP50Colour, 2.2), "p50");
  QCPGraph* p90 = add_line(plot, p, t, fan[1], pen_of(kP90Colour, 1.6), "p90");
  add_line(plot, p, t, fan[2], pen_of(kP99Colour.darker(115), 1.6), "p99");
  band90->setChannelFillGraph(p50);
  band99->setChannelFillGraph(p90);
  p.y->setRange(0, finite_max(fan[2]) * 1.25);
}

void draw_steps(QCustomPlot& plot, const Panel& seqs, const Panel& blocks, const GenRun& run) {
  QVector<double> t, running, decodes, used, total;
  for (const StepRecord& st : run.steps) {
    t.push_back(seconds_since(st.end, run.start));
    running.push_back(st.running);
    decodes.push_back(st.decodes);
    used.push_back(st.blocks_used);
    total.push_back(st.blocks_total);
  }
  // Decodes nearly always equal the running sequences; a filled area under
  // a line shows both, and the prefills between them.
  QCPGraph* d = add_line(plot, seqs, t, decodes, pen_of(kDecodesColour, 1.0), "decodes per step");
  d->setBrush(with_alpha(kDecodesColour, 45));
  add_line(plot, seqs, t, running, pen_of(kRunningColour, 1.4), "running sequences");
  seqs.y->setRange(0, std::max({finite_max(running), finite_max(decodes), 1.0}) * 1.3);

  // A cache far larger than the run needed would flatten the line into the
  // floor: then the total goes into the legend rather than onto the axis.
  const double cap = finite_max(total), peak = finite_max(used);
  const bool show_cap = cap > 0 && peak >= cap / 4;
  QCPGraph* u = add_line(plot, blocks, t, used, pen_of(kTokensColour, 1.8),
                         show_cap || cap <= 0
                             ? QStringLiteral("blocks in use")
                             : QStringLiteral("blocks in use (of %1)").arg(count(uint64_t(cap))));
  u->setBrush(with_alpha(kTokensColour, 40));
  if (show_cap)
    add_line(plot, blocks, t, total, pen_of(kLimitColour, 1.2, Qt::DashLine),
             QStringLiteral("blocks in the cache (%1)").arg(count(uint64_t(cap))));
  blocks.y->setRange(0, std::max({show_cap ? cap : 0.0, peak, 1.0}) * 1.3);
}

QString title_text(const GenRun& run) {
  QString t = QStringLiteral("Generation run: %1  \u2192  %2")
                  .arg(QString::fromStdString(run.pattern.empty() ? "(no pattern)" : run.pattern),
                       QString::fromStdString(run.target.empty() ? "(no target)" : run.target));
  if (!run.model.empty())
    t += QStringLiteral("  \u00b7  model %1").arg(QString::fromStdString(run.model));
  return t;
}

QString headline_text(const GenSummary& s) {
  const QString sep = QStringLiteral("   \u00b7   ");
  QString t = QStringLiteral("%1 tokens/s").arg(num(s.tokens_per_s));
  t += sep + QStringLiteral("TTFT p50 %1 ms, p99 %2 ms").arg(num(s.ttft.p50), num(s.ttft.p99));
  t += sep + QStringLiteral("ITL p50 %1 ms, p99 %2 ms").arg(num(s.itl.p50), num(s.itl.p99));
  t += sep + QStringLiteral("ok %1 of %2 sent").arg(count(s.ok), count(s.sent));
  t += sep + QStringLiteral("%1 s").arg(num(s.duration_s));
  return t;
}

void draw(QCustomPlot& plot, const GenRun& run, const GenSummary& s) {
  plot.setAutoAddPlottableToLegend(false);
  plot.plotLayout()->clear();  // drops the default axis rect and legend
  plot.setAntialiasedElements(QCP::aeAll);
  plot.setNotAntialiasedElements(QCP::aeAxes | QCP::aeGrid);
  plot.setBackground(Qt::white);

  double x_max = s.duration_s;
  for (const GenRequestResult& r : run.requests)
    for (TimePoint t : {r.first, r.last, r.finished})
      if (t != kNever) x_max = std::max(x_max, seconds_since(t, run.start));
  if (!run.steps.empty()) x_max = std::max(x_max, seconds_since(run.steps.back().end, run.start));
  if (!(x_max > 0)) x_max = 1;
  const Windows w = make_windows(run, x_max);

  QCPLayoutGrid* outer = plot.plotLayout();
  outer->setRowSpacing(0);
  outer->addElement(0, 0, new QCPTextElement(&plot, title_text(run), font_of(15, true)));
  outer->addElement(1, 0, new QCPTextElement(&plot, headline_text(s), font_of(11)));
  QString options = QString::fromStdString(run.options);
  if (!options.isEmpty()) options += QStringLiteral("   \u00b7   ");
  options += QStringLiteral("windows of %1 s").arg(num(w.length));
  auto* opts = new QCPTextElement(&plot, options, font_of(9));
  opts->setTextColor(kNoteColour);
  outer->addElement(2, 0, opts);
  auto* panels = new QCPLayoutGrid;
  outer->addElement(3, 0, panels);
  for (int r = 0; r < 3; ++r) outer->setRowStretchFactor(r, 0.001);
  outer->setRowStretchFactor(3, 1);
  panels->setRowSpacing(4);

  const bool steps = !run.steps.empty();
  auto* margins = new QCPMarginGroup(&plot);
  const Panel ttft = make_panel(plot, panels, 0, margins, "TTFT (ms)", x_max, false);
  const Panel itl = make_panel(plot, panels, 1, margins, "ITL (ms)", x_max, false);
  const Panel tokens = make_panel(plot, panels, 2, margins, "output tokens/s", x_max, !steps);
  draw_fan(plot, ttft, w.t, w.ttft, QStringLiteral("no first tokens"));
  draw_fan(plot, itl, w.t, w.itl, QStringLiteral("no token gaps"));
  QCPGraph* tps = add_line(plot, tokens, w.t, w.tokens_per_s, pen_of(kTokensColour, 2.0),
                           QStringLiteral("tokens/s at the client"));
  tps->setBrush(with_alpha(kTokensColour, 40));
  tokens.y->setRange(0, std::max(1.0, finite_max(w.tokens_per_s)) * 1.3);
  if (steps) {
    const Panel seqs = make_panel(plot, panels, 3, margins, "sequences per step", x_max, false);
    const Panel blocks = make_panel(plot, panels, 4, margins, "cache blocks", x_max, true);
    draw_steps(plot, seqs, blocks, run);
    panels->setRowStretchFactor(3, 0.9);
    panels->setRowStretchFactor(4, 0.7);
  }
  panels->setRowStretchFactor(0, 1.2);
  panels->setRowStretchFactor(1, 1.2);
  panels->setRowStretchFactor(2, 0.8);
}

}  // namespace

Status write_gen_run_plot(const GenRun& run, const GenSummary& s, const std::string& path,
                          int width, int height) {
  return picture::save_png(path, width, height, "generation run plot",
                           [&](QCustomPlot& plot) { draw(plot, run, s); });
}

}  // namespace batchscope
