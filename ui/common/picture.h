// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The parts of the run pictures (`bench --plot`, request-level and
// generation runs): one palette, fonts and number formats, panels stacked
// on a shared time axis with a frame and a legend of their own, step lines,
// notes, and writing the picture offscreen to a PNG.
// Thread-safety: GUI thread only (save_png() makes a QApplication when the
// process has none).

// qcustomplot.h uses the Qt keywords `signals` and `foreach`; this file must
// never include torch (see DESIGN.md section 1).
#include <qcustomplot.h>

#include <QImage>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace batchscope::picture {

// One palette for every picture, so that p99 always looks like p99: the fan
// darkens towards the median, and every "max" is grey and dashed.
inline const QColor kP50Colour(0x0b, 0x3d, 0x91);
inline const QColor kP90Colour(0x2f, 0x74, 0xc0);
inline const QColor kP99Colour(0x8d, 0xb9, 0xe8);
inline const QColor kMaxColour(0x70, 0x70, 0x70);
inline const QColor kLimitColour(0xb0, 0x1c, 0x2e);
inline const QColor kNoteColour(0x55, 0x55, 0x55);

// Point sizes are chosen for a ~1400 px wide picture viewed at 100%.
QFont font_of(int point_size, bool bold = false);
double seconds_since(TimePoint t, TimePoint start);
// "1,234", "12.3", "1.23": enough digits to read, never a wall of them.
QString num(double v);
QString count(uint64_t v);
QPen pen_of(const QColor& c, double width, Qt::PenStyle style = Qt::SolidLine);
QColor with_alpha(QColor c, int alpha);
// The largest finite value, 0 when there is none.
double finite_max(const QVector<double>& v);

// Everything a panel needs: its axis rect, its axes and its own legend.
struct Panel {
  QCPAxisRect* rect = nullptr;
  QCPAxis* x = nullptr;
  QCPAxis* y = nullptr;
  QCPLegend* legend = nullptr;
};

// A panel in row `row` of `layout`, its time axis 0..x_max, labelled only when `bottom`.
Panel make_panel(QCustomPlot& plot, QCPLayoutGrid* layout, int row, QCPMarginGroup* margins,
                 const QString& y_label, double x_max, bool bottom);
// A line in `p`'s legend; `steps`: each value holds until the next key.
QCPGraph* add_line(QCustomPlot& plot, const Panel& p, const QVector<double>& keys,
                   const QVector<double>& values, const QPen& pen, const QString& name,
                   bool steps = true);
// A grey note in the middle of a panel, for panels with nothing to draw.
void add_note(QCustomPlot& plot, const Panel& p, const QString& text);
// A small grey remark in a panel's top left corner.
void add_corner_note(QCustomPlot& plot, const Panel& p, const QString& text);

// Draws a `width` x `height` picture with `draw` and saves it as a PNG; the
// error names `what`, the path and why it could not be written.
Status save_png(const std::string& png_path, int width, int height, const char* what,
                const std::function<void(QCustomPlot&)>& draw);
// The same picture as an image, drawn on the GUI thread; save_image() then
// encodes it on any thread (encoding a large PNG takes longer than drawing).
Expected<QImage> render(int width, int height, const char* what,
                        const std::function<void(QCustomPlot&)>& draw);
Status save_image(const QImage& image, const std::string& png_path, const char* what);

}  // namespace batchscope::picture
