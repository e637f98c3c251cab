// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/workbench/live_plots.h"

#include <qcustomplot.h>

#include "ui/common/plot_panels.h"

#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace batchscope {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr auto kKeep = std::chrono::seconds(301);  // batch points: the longest span, and a second
constexpr size_t kMaxBatches = 300'000;            // batch points kept
constexpr size_t kMaxSteps = 200;                  // line points per span: a step every few pixels

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

QCPGraph* line(QCustomPlot* plot, QCPAxisRect* rect, const QString& name, QColor color,
               Qt::PenStyle style = Qt::SolidLine, double width = 1.6) {
  QCPGraph* g = plot->addGraph(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  g->setName(name);
  g->setPen(QPen(color, width, style));
  g->setLineStyle(QCPGraph::lsStepLeft);
  return g;
}

void set(QCPGraph* g, const std::vector<double>& x, const std::vector<double>& y) {
  g->setData(QVector<double>(x.begin(), x.end()), QVector<double>(y.begin(), y.end()), true);
}

// The y range that shows every visible plottable of `rect` over [-span, 0].
void fit_y(QCPAxisRect* rect, double span) {
  double upper = 0;
  for (QCPAbstractPlottable* p : rect->plottables()) {
    if (!p->visible() || p->valueAxis() != rect->axis(QCPAxis::atLeft)) continue;
    bool found = false;
    const QCPRange r = p->getValueRange(found, QCP::sdBoth, QCPRange(-span, 0));
    if (found) upper = std::max(upper, r.upper);
  }
  rect->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, upper * 1.15));
}

// Shows or hides `g` with its entry in `rect`'s legend.
void show_graph(QCPGraph* g, QCPAxisRect* rect, bool shown) {
  if (shown == g->visible()) return;
  g->setVisible(shown);
  auto* legend = panel_legend(rect);
  if (shown)
    g->addToLegend(legend);
  else
    g->removeFromLegend(legend);
}

bool any_number(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return x == x; });
}

}  // namespace

namespace {

// Grows whenever any count of the windows [i, j) grows (counts never shrink).
template <class Windows>
uint64_t fingerprint(const Windows& windows, size_t i, size_t j) {
  uint64_t f = 0;
  for (size_t w = i; w < j; ++w) {
    const MetricsWindow& m = windows[w];
    f += m.requests() + m.arrivals + m.batches + m.depth_samples + 1;
  }
  return f;
}

template <class Windows>
PlotBin make_bin(const Windows& windows, size_t i, size_t j, double per_s) {
  LogHistogram total, sizes;
  std::array<LogHistogram, kRunStageCount> stages;
  uint64_t arrivals = 0, ok = 0, rejected = 0, batches = 0, batch_sum = 0, depth_n = 0,
           depth_sum = 0, preparing_sum = 0, padded = 0, real = 0;
  uint32_t depth_max = 0;
  for (size_t w = i; w < j; ++w) {
    const MetricsWindow& m = windows[w];
    total.merge(m.total_ns);
    for (int st = 0; st < kRunStageCount; ++st) stages[st].merge(m.stages.ns[st]);
    sizes.merge(m.batch_sizes);
    arrivals += m.arrivals;
    ok += m.count(Outcome::kOk);
    rejected += m.count(Outcome::kRejected);
    batches += m.batches;
    batch_sum += m.batch_size_sum;
    padded += m.padded_length;
    real += m.real_length;
    depth_n += m.depth_samples;
    depth_sum += m.depth_sum;
    preparing_sum += m.preparing_sum;
    depth_max = std::max(depth_max, m.max_queue_depth);
  }
  PlotBin b;
  const bool has = !total.empty();
  const LatencySummary l = summarize(total);
  b.p50_ms = has ? l.p50_us / 1000 : kNaN;
  b.p90_ms = has ? l.p90_us / 1000 : kNaN;
  b.p99_ms = has ? l.p99_us / 1000 : kNaN;
  b.max_ms = has ? l.max_us / 1000 : kNaN;
  for (int st = 0; st < kRunStageCount; ++st) {
    b.stage_p50_ms[st] =
        stages[st].empty() ? kNaN : static_cast<double>(stages[st].quantile(0.5)) / 1e6;
  }
  b.depth_mean = depth_n ? static_cast<double>(depth_sum) / static_cast<double>(depth_n) : kNaN;
  b.depth_max = depth_n ? depth_max : kNaN;
  b.preparing_mean =
      depth_n ? static_cast<double>(preparing_sum) / static_cast<double>(depth_n) : kNaN;
  b.batch_mean = batches ? static_cast<double>(batch_sum) / static_cast<double>(batches) : kNaN;
  b.padding_pct =
      padded ? 100.0 * (1.0 - static_cast<double>(real) / static_cast<double>(padded)) : kNaN;
  b.offered = static_cast<double>(arrivals) * per_s;
  b.completed = static_cast<double>(ok) * per_s;
  b.rejected = static_cast<double>(rejected) * per_s;
  sizes.for_each_bucket([&](uint64_t lower, uint64_t, uint64_t c) {
    b.sizes.emplace_back(static_cast<uint32_t>(lower), c);
  });
  return b;
}

// Windows: any random-access container of MetricsWindow (a snapshot's
// vector, the aggregator's deque), so neither has to be copied.
template <class Windows>
PlotSeries series(const Windows& windows, Duration length, double target, double span_s,
                  size_t max_points, PlotBinCache* cache, size_t skip_newest) {
  PlotSeries out;
  if (windows.size() <= skip_newest) return out;
  const size_t end = windows.size() - skip_newest;
  const double length_s = seconds(length);
  out.newest = windows[end - 1].start + length;
  // The windows in the span, and the one before it so that lines reach the edge.
  size_t first = end;
  while (first > 0 && seconds(windows[first - 1].start - out.newest) >= -span_s - length_s) --first;
  const auto in_span = static_cast<size_t>(std::ceil(span_s / length_s));
  const int64_t k = static_cast<int64_t>(
      std::max<size_t>(1, (in_span + max_points - 1) / std::max<size_t>(1, max_points)));
  const auto key = [&](size_t w) { return windows[w].start.time_since_epoch() / length; };
  // The first window in the span: the one before it is a bin of its own, so
  // that no bin straddles the span's start and the histogram has all of it.
  size_t lead = first;
  while (lead < end && seconds(windows[lead].start - out.newest) < -span_s) ++lead;
  PlotBinCache fresh;
  size_t i = first;
  while (i < end) {
    size_t j = i + 1;  // bins are aligned to multiples of k windows since the epoch
    while (j < end && j != lead && key(j) % k != 0) ++j;
    // A partial bin at either edge covers fewer windows: rates over what it covers.
    const double per_s = 1.0 / (length_s * static_cast<double>(j - i));
    const uint64_t f = fingerprint(windows, i, j) * 1000003 + static_cast<uint64_t>(j - i);
    const int64_t bin_key = key(i) * 4096 + k;
    PlotBin bin;
    auto hit = cache ? cache->find(bin_key) : nullptr;
    if (hit && hit->fingerprint == f) {
      bin = *hit;
    } else {
      bin = make_bin(windows, i, j, per_s);
      bin.fingerprint = f;
    }
    const double t = seconds(windows[i].start - out.newest);
    out.x.push_back(t);
    out.p50_ms.push_back(bin.p50_ms);
    out.p90_ms.push_back(bin.p90_ms);
    out.p99_ms.push_back(bin.p99_ms);
    out.max_ms.push_back(bin.max_ms);
    for (int st = 0; st < kRunStageCount; ++st)
      out.stage_p50_ms[st].push_back(bin.stage_p50_ms[st]);
    out.target_ms.push_back(target);
    out.depth_mean.push_back(bin.depth_mean);
    out.depth_max.push_back(bin.depth_max);
    out.preparing_mean.push_back(bin.preparing_mean);
    out.batch_mean.push_back(bin.batch_mean);
    out.padding_pct.push_back(bin.padding_pct);
    out.offered.push_back(bin.offered);
    out.completed.push_back(bin.completed);
    out.rejected.push_back(bin.rejected);
    if (t >= -span_s)
      for (const auto& [size, n] : bin.sizes) out.batch_histogram[size] += n;
    if (cache) fresh.store(bin_key, std::move(bin));
    i = j;
  }
  if (cache) *cache = std::move(fresh);
  return out;
}

}  // namespace

PlotSeries plot_series(const MetricsSnapshot& s, double span_s, size_t max_points,
                       PlotBinCache* cache, size_t skip_newest) {
  return series(s.windows, s.window_length, s.engine.options.target_p99_ms, span_s, max_points,
                cache, skip_newest);
}

PlotSeries plot_series(const MetricsAggregator& a, double target_p99_ms, double span_s,
                       size_t max_points, PlotBinCache* cache, size_t skip_newest) {
  return series(a.windows(), a.window_length(), target_p99_ms, span_s, max_points, cache,
                skip_newest);
}

LivePlots::LivePlots(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  plot_ = new QCustomPlot;
  layout->addWidget(plot_);
  make_panels();
}

void LivePlots::make_panels() {
  prepare_stacked_plot(plot_, 640, 440);
  auto add_rect = [&](const QString& ylabel) { return add_panel(plot_, ylabel); };
  lat_ = add_rect("latency (ms)");
  depth_ = add_rect("queue depth");
  batch_ = add_rect("batch size");
  hist_ = add_rect("batches");
  tput_ = add_rect("requests / s");
  tput_->axis(QCPAxis::atBottom)->setLabel("seconds ago");
  hist_->axis(QCPAxis::atBottom)->setLabel("batch size (span)");
  // Row 2 holds the batch points and, beside them, the histogram.
  auto* batch_row = new QCPLayoutGrid;
  batch_row->addElement(0, 0, batch_);
  batch_row->addElement(0, 1, hist_);
  batch_row->setColumnStretchFactors({3.0, 1.0});
  auto* layout = plot_->plotLayout();
  layout->addElement(0, 0, lat_);
  layout->addElement(1, 0, depth_);
  layout->addElement(2, 0, batch_row);
  layout->addElement(3, 0, tput_);
  layout->setRowStretchFactors({1.3, 1.0, 1.1, 1.0});
  auto* group = new QCPMarginGroup(plot_);
  for (QCPAxisRect* r : {lat_, depth_, batch_, tput_}) r->setMarginGroup(QCP::msLeft, group);
  auto* right = new QCPMarginGroup(plot_);
  for (QCPAxisRect* r : {lat_, depth_, hist_, tput_}) r->setMarginGroup(QCP::msRight, right);

  max_ = line(plot_, lat_, "max", QColor(120, 120, 120), Qt::DashLine, 1.0);
  p99_ = line(plot_, lat_, "p99", QColor(110, 160, 220));
  p90_ = line(plot_, lat_, "p90", QColor(40, 100, 190));
  p50_ = line(plot_, lat_, "p50", QColor(10, 40, 120), Qt::SolidLine, 2.0);
  p99_->setBrush(QColor(110, 160, 220, 60));
  p99_->setChannelFillGraph(p90_);
  p90_->setBrush(QColor(40, 100, 190, 70));
  p90_->setChannelFillGraph(p50_);
  target_ = line(plot_, lat_, "p99 target", QColor(200, 40, 40), Qt::DotLine, 1.4);
  // Each stage's median, thin, in colours away from the fan's blues.
  const QColor stage_colours[kRunStageCount] = {
      QColor(150, 150, 40),  // preprocess wait
      QColor(200, 150, 0),   // preprocess
      QColor(40, 150, 60),   // batch wait
      QColor(150, 60, 160),  // lane wait
      QColor(200, 80, 40),   // model
      QColor(120, 80, 40),   // postprocess
  };
  for (int st = 0; st < kRunStageCount; ++st) {
    const QString name = QString::fromUtf8(stage_label(static_cast<RunStage>(st))) + " p50";
    stages_[st] = line(plot_, lat_, name, stage_colours[st], Qt::DashDotLine, 1.2);
  }
  depth_mean_ = line(plot_, depth_, "mean", QColor(20, 130, 90), Qt::SolidLine, 1.8);
  depth_mean_->setBrush(QColor(20, 130, 90, 40));
  depth_max_ = line(plot_, depth_, "max", QColor(120, 120, 120), Qt::DashLine, 1.0);
  preparing_ =
      line(plot_, depth_, "being prepared (mean)", QColor(200, 150, 0), Qt::SolidLine, 1.4);
  batch_points_ = line(plot_, batch_, "each batch", QColor(200, 100, 20, 90));
  batch_points_->setLineStyle(QCPGraph::lsNone);
  // A small pixmap per batch: far cheaper to draw than antialiased discs.
  QPixmap dot(3, 3);
  dot.fill(QColor(200, 100, 20, 120));
  batch_points_->setScatterStyle(QCPScatterStyle(dot));
  batch_mean_ = line(plot_, batch_, "mean", QColor(120, 50, 0), Qt::SolidLine, 1.8);
  // Padding waste, on the right axis (0-100 %), shown only for a model whose
  // inputs vary in length.
  padding_ = plot_->addGraph(batch_->axis(QCPAxis::atBottom), batch_->axis(QCPAxis::atRight));
  padding_->setName("padding %");
  padding_->setPen(QPen(QColor(120, 60, 170), 1.6, Qt::DashLine));
  padding_->setLineStyle(QCPGraph::lsStepLeft);
  padding_->setVisible(false);
  batch_->axis(QCPAxis::atRight)->setRange(0, 100);
  batch_->axis(QCPAxis::atRight)->setLabel("padding %");
  histogram_ = new QCPBars(hist_->axis(QCPAxis::atBottom), hist_->axis(QCPAxis::atLeft));
  histogram_->setName("batches by size");
  histogram_->setPen(Qt::NoPen);
  histogram_->setBrush(QColor(200, 100, 20, 170));
  histogram_->setWidthType(QCPBars::wtPlotCoords);
  histogram_->setWidth(1.0);
  hist_->axis(QCPAxis::atBottom)->setRange(0, 33);
  hist_->axis(QCPAxis::atBottom)->ticker()->setTickCount(3);
  offered_ = line(plot_, tput_, "offered", QColor(130, 130, 130), Qt::DashLine, 1.4);
  completed_ = line(plot_, tput_, "completed", QColor(30, 30, 30), Qt::SolidLine, 1.6);
  rejected_ = line(plot_, tput_, "rejected", QColor(210, 40, 40), Qt::SolidLine, 1.6);
  for (QCPAxisRect* r : {lat_, depth_, batch_, tput_}) {
    auto* legend = panel_legend(r);
    for (QCPGraph* g : r->graphs()) legend->addItem(new QCPPlottableLegendItem(legend, g));
  }
  padding_->removeFromLegend(panel_legend(batch_));  // until a batch is padded
  // The fan and the stages' medians: five entries a row, so that eleven fit
  // the panel's width.
  panel_legend(lat_)->setWrap(5);
  preparing_->setVisible(false);  // until a stage prepares a request
  preparing_->removeFromLegend(panel_legend(depth_));
  for (QCPGraph* g : stages_) {  // until a request goes through it
    g->setVisible(false);
    g->removeFromLegend(panel_legend(lat_));
  }
  batch_->axis(QCPAxis::atRight)->setVisible(false);
  auto* hist_legend = panel_legend(hist_);
  hist_legend->setVisible(false);
  plot_->setInteractions(QCP::iRangeZoom);
  plot_->setMouseTracking(true);
  connect(plot_, &QCustomPlot::mouseMove, this,
          [this](QMouseEvent* e) { hover(e->pos(), e->globalPosition().toPoint()); });
}

void LivePlots::hover(const QPoint& pos, const QPoint& global) {
  QCPAxisRect* rect = plot_->axisRectAt(pos);
  if (!rect) return QToolTip::hideText();
  const double at = rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
  QString text;
  if (rect == hist_) {
    const auto size = static_cast<uint32_t>(std::lround(std::max(0.0, at)));
    text = QString("batch size %1: %2 batches").arg(size).arg(histogram_count(size));
  } else {
    text = hover_readout(rect, at, batch_points_);
  }
  QToolTip::showText(global, text, plot_);
}

void LivePlots::add_batches(const RecordBatch& drained) {
  for (const BatchRecord& b : drained.batches) {
    if (b.failed || b.size == 0) continue;
    const BatchPoint p{finished_at(b), b.size};
    // Lanes finish out of order by a little: insert from the back.
    auto it = batches_.end();
    while (it != batches_.begin() && std::prev(it)->at > p.at) --it;
    batches_.insert(it, p);
  }
  while (batches_.size() > kMaxBatches) batches_.pop_front();
}

bool LivePlots::draw(const MetricsSnapshot& s, double span_s) {
  return draw_windows(s.windows, s.engine.options, span_s,
                      [&] { return plot_series(s, span_s, kMaxSteps, &cache_, 1); });
}

bool LivePlots::draw(const MetricsAggregator& a, const Options& in_force, double span_s) {
  return draw_windows(a.windows(), in_force, span_s, [&] {
    return plot_series(a, in_force.target_p99_ms, span_s, kMaxSteps, &cache_, 1);
  });
}

template <class Windows, class Map>
bool LivePlots::draw_windows(const Windows& windows, const Options& in_force, double span_s,
                             Map map) {
  // The newest window is still filling: draw up to the one before it, and
  // only when that one is new (ten times a second with 100 ms windows).
  if (windows.size() < 2) return false;
  const TimePoint newest = windows[windows.size() - 2].start;
  if (newest == drawn_newest_ && span_s == drawn_span_ && !dirty_) return false;
  const PlotSeries p = map();
  if (p.x.empty()) return false;
  drawn_newest_ = newest;
  drawn_span_ = span_s;
  dirty_ = false;
  show_series(p, in_force, span_s);
  return true;
}

void LivePlots::show_series(const PlotSeries& p, const Options& in_force, double span_s) {
  set(p50_, p.x, p.p50_ms);
  set(p90_, p.x, p.p90_ms);
  set(p99_, p.x, p.p99_ms);
  set(max_, p.x, p.max_ms);
  set(target_, p.x, p.target_ms);
  // The target line, and its legend entry, only where a strategy aims at it.
  show_graph(target_, lat_, in_force.strategy == StrategyKind::kAdaptive);
  for (int st = 0; st < kRunStageCount; ++st) {
    set(stages_[st], p.x, p.stage_p50_ms[st]);
    show_graph(stages_[st], lat_, any_number(p.stage_p50_ms[st]));
  }
  set(depth_mean_, p.x, p.depth_mean);
  set(depth_max_, p.x, p.depth_max);
  set(preparing_, p.x, p.preparing_mean);
  show_graph(preparing_, depth_,
             std::any_of(p.preparing_mean.begin(), p.preparing_mean.end(),
                         [](double v) { return v > 0; }));
  set(batch_mean_, p.x, p.batch_mean);
  set(padding_, p.x, p.padding_pct);
  const bool padded = any_number(p.padding_pct);
  show_graph(padding_, batch_, padded);
  batch_->axis(QCPAxis::atRight)->setVisible(padded);
  set(offered_, p.x, p.offered);
  set(completed_, p.x, p.completed);
  set(rejected_, p.x, p.rejected);

  while (!batches_.empty() && batches_.front().at < p.newest - kKeep) batches_.pop_front();
  // Every batch in the span, but one point per size per pixel column: more
  // would land on the same pixels and only cost time to draw.
  // Columns two pixels wide: a point is three.
  const double columns = std::max(50, batch_->axis(QCPAxis::atBottom)->axisRect()->width() / 2);
  std::vector<int64_t> last_column;
  QVector<double> bx, by;
  batches_in_span_ = 0;
  for (const BatchPoint& b : batches_) {
    const double t = seconds(b.at - p.newest);
    if (t < -span_s || t > 0) continue;
    ++batches_in_span_;
    const auto column = static_cast<int64_t>((t + span_s) / span_s * columns);
    if (b.size >= last_column.size()) last_column.resize(b.size + 1, -1);
    if (last_column[b.size] == column) continue;
    last_column[b.size] = column;
    bx << t;
    by << b.size;
  }
  batch_points_->setData(bx, by, true);

  QVector<double> hk, hv;
  uint32_t largest = 1;
  for (const auto& [size, n] : p.batch_histogram) {
    hk << size;
    hv << static_cast<double>(n);
    largest = std::max(largest, size);
  }
  histogram_->setData(hk, hv, true);
  hist_->axis(QCPAxis::atBottom)
      ->setRange(0, std::max<double>(in_force.max_batch_size, largest) + 1);

  for (QCPAxisRect* r : {lat_, depth_, batch_, tput_}) {
    r->axis(QCPAxis::atBottom)->setRange(-span_s, 0);
    fit_y(r, span_s);
  }
  bool found = false;
  const QCPRange hr = histogram_->getValueRange(found);
  hist_->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, (found ? hr.upper : 0) * 1.15));
  // Each legend to a corner where it hides no line (as laid out last tick).
  for (QCPAxisRect* r : {lat_, depth_, batch_, tput_}) place_legend_clear(r, panel_legend(r));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlots::clear() {
  batches_.clear();
  drawn_newest_ = TimePoint{};
  dirty_ = true;
  cache_ = PlotBinCache{};
  batches_in_span_ = 0;
  for (QCPGraph* g : {p50_, p90_, p99_, max_, target_, depth_mean_, depth_max_, preparing_,
                      batch_points_, batch_mean_, padding_, offered_, completed_, rejected_})
    g->data()->clear();
  for (QCPGraph* g : stages_) g->data()->clear();
  histogram_->data()->clear();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool LivePlots::save_png(const QString& path) { return plot_->savePng(path, 0, 0, 1.0); }

int LivePlots::plotted_windows() const { return p50_->data()->size(); }

bool LivePlots::preparing_shown() const { return preparing_->visible(); }

bool LivePlots::stage_shown(RunStage s) const { return stages_[static_cast<int>(s)]->visible(); }

int LivePlots::plotted_batches() const { return batch_points_->data()->size(); }

uint64_t LivePlots::batches_in_span() const { return batches_in_span_; }

double LivePlots::histogram_count(uint32_t size) const {
  auto it = histogram_->data()->findBegin(size - 0.5, false);
  return it != histogram_->data()->constEnd() && it->key == size ? it->value : 0;
}

}  // namespace batchscope
