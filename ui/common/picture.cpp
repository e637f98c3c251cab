// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/picture.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QThread>

#include <cmath>
#include <memory>

#include "ui/common/plot_panels.h"

namespace batchscope::picture {

// Point sizes are chosen for a ~1400 px wide picture viewed at 100%.
QFont font_of(int point_size, bool bold) {
  QFont f = QApplication::font();
  f.setPointSize(point_size);
  f.setBold(bold);
  return f;
}

double seconds_since(TimePoint t, TimePoint start) {
  return std::chrono::duration<double>(t - start).count();
}

// "1,234", "12.3", "1.23": enough digits to read, never a wall of them.
QString num(double v) {
  if (!std::isfinite(v)) return QStringLiteral("-");
  const double a = std::fabs(v);
  const int precision = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return QLocale(QLocale::English).toString(v, 'f', precision);
}

QString count(uint64_t v) { return QLocale(QLocale::English).toString(qulonglong(v)); }

QPen pen_of(const QColor& c, double width, Qt::PenStyle style) {
  QPen p(c, width, style);
  p.setCapStyle(Qt::FlatCap);
  return p;
}

QColor with_alpha(QColor c, int alpha) {
  c.setAlpha(alpha);
  return c;
}

Panel make_panel(QCustomPlot& plot, QCPLayoutGrid* layout, int row, QCPMarginGroup* margins,
                 const QString& y_label, double x_max, bool bottom) {
  Panel p;
  p.rect = new QCPAxisRect(&plot, true);
  layout->addElement(row, 0, p.rect);
  // Equal left/right margins line the three time axes up exactly, whatever
  // the width of each panel's tick labels.
  p.rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  p.x = p.rect->axis(QCPAxis::atBottom);
  p.y = p.rect->axis(QCPAxis::atLeft);
  p.x->setRange(0, x_max);
  p.x->setTickLabelFont(font_of(10));
  p.y->setTickLabelFont(font_of(10));
  p.y->setLabel(y_label);
  p.y->setLabelFont(font_of(11));
  p.y->setPadding(6);
  if (bottom) {
    p.x->setLabel(QStringLiteral("time since run start (s)"));
    p.x->setLabelFont(font_of(11));
  } else {
    // The time axis is shared: labels on the bottom panel only, grid on all.
    p.x->setTickLabels(false);
    p.x->setSubTicks(false);
  }
  // A frame around each panel: top and right axes without ticks or labels.
  for (QCPAxis::AxisType side : {QCPAxis::atTop, QCPAxis::atRight}) {
    QCPAxis* a = p.rect->axis(side);
    a->setVisible(true);
    a->setTicks(false);
    a->setTickLabels(false);
  }
  p.rect->axis(QCPAxis::atTop)->setRange(0, x_max);
  // QCustomPlot puts only its default rect's axes and grids on the "axes" and
  // "grid" layers; added rects leave both on "main", where grid lines and
  // graphs would be drawn over the axis lines.
  p.rect->setLayer(QStringLiteral("background"));
  for (QCPAxis* a : p.rect->axes()) {
    a->setLayer(QStringLiteral("axes"));
    a->grid()->setLayer(QStringLiteral("grid"));
  }
  for (QCPAxis* a : {p.x, p.y}) {
    a->grid()->setPen(pen_of(QColor(0xe4, 0xe4, 0xe4), 1));
    a->grid()->setZeroLinePen(Qt::NoPen);
    a->grid()->setSubGridVisible(false);
  }

  // Legends sit inside the panel in one row at the top right; every panel
  // reserves headroom above its data so the legend never covers a line.
  p.legend = new QCPLegend;
  p.rect->insetLayout()->addElement(p.legend, Qt::AlignTop | Qt::AlignRight);
  p.legend->setLayer(QStringLiteral("legend"));
  p.legend->setFont(font_of(10));
  p.legend->setBrush(QBrush(QColor(255, 255, 255, 230)));
  p.legend->setBorderPen(pen_of(QColor(0xbb, 0xbb, 0xbb), 1));
  p.legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  p.legend->setWrap(12);
  p.legend->setIconSize(24, 12);
  return p;
}

QCPGraph* add_line(QCustomPlot& plot, const Panel& p, const QVector<double>& keys,
                   const QVector<double>& values, const QPen& pen, const QString& name,
                   bool steps) {
  QCPGraph* g = plot.addGraph(p.x, p.y);
  g->setData(keys, values, true);
  g->setPen(pen);
  g->setName(name);
  // A window's figure holds for the whole window: steps say so honestly,
  // where a polyline through midpoints would invent values between windows.
  if (steps) g->setLineStyle(QCPGraph::lsStepLeft);
  g->addToLegend(p.legend);
  return g;
}

// A grey note in the middle of a panel, for panels with nothing to draw.
void add_note(QCustomPlot& plot, const Panel& p, const QString& text) {
  auto* note = new QCPItemText(&plot);
  note->setClipAxisRect(p.rect);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setAxisRect(p.rect);
  note->position->setCoords(0.5, 0.5);
  note->setPositionAlignment(Qt::AlignCenter);
  note->setText(text);
  note->setFont(font_of(12));
  note->setColor(kNoteColour);
  p.y->setTickLabels(false);  // an empty panel's scale means nothing
}

// A small grey remark in a panel's top left corner.
void add_corner_note(QCustomPlot& plot, const Panel& p, const QString& text) {
  auto* note = new QCPItemText(&plot);
  note->setClipAxisRect(p.rect);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setAxisRect(p.rect);
  note->position->setCoords(0.0, 0.0);
  note->setPositionAlignment(Qt::AlignTop | Qt::AlignLeft);
  note->setPadding(QMargins(8, 6, 8, 6));
  note->setText(text);
  note->setFont(font_of(9));
  note->setColor(kNoteColour);
}

double finite_max(const QVector<double>& v) {
  double m = 0;
  for (double x : v)
    if (std::isfinite(x)) m = std::max(m, x);
  return m;
}

Expected<QImage> render(int width, int height, const char* what,
                        const std::function<void(QCustomPlot&)>& draw) {
  if (width < 200 || height < 200 || width > 16000 || height > 16000) {
    return invalid_argument(std::string(what) + " size " + std::to_string(width) + "x" +
                            std::to_string(height) + " is outside 200..16000 pixels");
  }
  // Widgets need a QApplication. A CLI calling us headless has none: make one
  // for this call, on the offscreen platform unless the user chose another.
  static int argc = 1;
  static char arg0[] = "batchscope";
  static char* argv[] = {arg0, nullptr};
  std::unique_ptr<QApplication> owned_app;
  if (QCoreApplication::instance() == nullptr) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    owned_app = std::make_unique<QApplication>(argc, argv);
  } else if (qobject_cast<QApplication*>(QCoreApplication::instance()) == nullptr) {
    return invalid_argument("writing a " + std::string(what) +
                            " needs a QApplication, but this process made a QCoreApplication");
  }
  if (QThread::currentThread() != QCoreApplication::instance()->thread())
    return Error{ErrorCode::kInternal, std::string(what) + " drawn off the GUI thread"};

  QImage image;
  {
    // The widget must go before an application we made for it.
    QCustomPlot plot;
    plot.resize(width, height);
    draw(plot);
    // Laid out once, so that each legend can go where it hides no data.
    plot.replot(QCustomPlot::rpImmediateRefresh);
    for (QCPAxisRect* rect : plot.axisRects()) {
      for (QCPLayoutElement* e : rect->insetLayout()->elements(false)) {
        if (auto* legend = qobject_cast<QCPLegend*>(e)) place_legend_clear(rect, legend);
      }
    }
    image = plot.toPixmap(width, height, 1.0).toImage();
  }
  return image;
}

Status save_image(const QImage& image, const std::string& png_path, const char* what) {
  const QString path = QString::fromStdString(png_path);
  if (!png_path.empty() && image.save(path, "PNG")) return Status::Ok();
  const QFileInfo info(path);
  std::string why = "cannot write the file";
  if (png_path.empty())
    why = "empty path";
  else if (!info.absoluteDir().exists())
    why = "its directory does not exist";
  else if (info.isDir())
    why = "it is a directory";
  return invalid_argument("cannot write " + std::string(what) + " to '" + png_path + "': " + why);
}

Status save_png(const std::string& png_path, int width, int height, const char* what,
                const std::function<void(QCustomPlot&)>& draw) {
  auto image = render(width, height, what, draw);
  if (!image) return image.error();
  return save_image(*image, png_path, what);
}

}  // namespace batchscope::picture
