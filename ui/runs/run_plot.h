// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A picture of one recorded traffic run, written as a PNG: three panels that
// share the time axis (seconds since RunData::start):
//   1. latency fan per window: p50, p90, p99 and max (ms), with the bands
//      p50..p90 and p90..p99 filled;
//   2. queue depth per window: mean and max;
//   3. batch sizes: every batch as a dot at its run_end (thinned to at most
//      kMaxBatchDots dots), plus the window mean; runs without batch records
//      (HTTP against a foreign URL) get a note instead.
// A title carries the pattern, target, model and headline figures.
//
// Qt: drawing uses QCustomPlot widgets, so a QApplication must exist in this
// process and the call must come from its (GUI) thread. If no Qt application
// exists at all, write_run_plot() creates a QApplication for the duration of
// the call, first defaulting QT_QPA_PLATFORM to "offscreen" so that a headless
// CLI needs no display. If a QCoreApplication (not a QApplication) exists,
// widgets cannot be made and the call returns an error.
//
// Cost: proportional to windows + min(batches, kMaxBatchDots); a few hundred
// milliseconds for a typical run, most of it PNG encoding.
// Thread-safety: GUI thread only.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runs/run_record.h"

class QCustomPlot;
class QImage;

namespace batchscope {

// More dots than this overdraw into a solid smear and slow the drawing; beyond
// it the batch panel shows every k-th batch and says so in its legend.
inline constexpr std::size_t kMaxBatchDots = 50000;

// Writes the picture of `run` (summarised as `summary`, normally
// summarize_run(run)) to `png_path`, `width` x `height` pixels. Errors:
// kInvalidArgument for a size outside 200..16000 pixels, for a file that cannot
// be written (the message names the path), or when only a QCoreApplication
// exists.
Status write_run_plot(const RunData& run, const RunSummary& summary, const std::string& png_path,
                      int width = 1400, int height = 1000);

// The same picture as an image (GUI thread), for a caller that encodes the
// PNG elsewhere (picture::save_image, any thread).
Expected<QImage> render_run_plot(const RunData& run, const RunSummary& summary, int width = 1400,
                                 int height = 1000);

// One run in an overlay of latency fans.
struct FanRun {
  std::string name;
  const RunSummary* summary = nullptr;
};

// Draws each run's fan on `plot` over time since its start: the p50 line and
// the p90..p99 band from its summary windows, a colour a run (blue, orange,
// green, ...); windows without an answer are gaps. Returns the x and y
// extents drawn (0 when nothing was).
std::pair<double, double> draw_fan_overlay(QCustomPlot& plot, const std::vector<FanRun>& runs);

// The overlay as a PNG, titled `title`, with a legend above the plot.
Status write_fan_overlay(const std::vector<FanRun>& runs, const std::string& title,
                         const std::string& png_path, int width = 1200, int height = 600);

}  // namespace batchscope
