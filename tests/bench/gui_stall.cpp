// SPDX-License-Identifier: GPL-3.0-or-later
// The longest the window's GUI thread stalls while the Runs tab works on a
// kept run of N requests (default 1,000,000): a frame-gap probe (a 5 ms
// timer that records how late each tick fires) runs while the tab exports
// the run (its records read and its text files written on the export's
// thread, the PNG drawn on the GUI thread), compares it with another run,
// renames it and removes it. Prints each step's longest gap; the target is
// under 50 ms. The figures are in docs/history.md.
// Run: build/bin/gui_stall [N [BATCHSCOPE]] (QT_QPA_PLATFORM defaults to
// offscreen); with BATCHSCOPE, the PNG is drawn by `BATCHSCOPE runs export`
// in a process of its own, as the window does.

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "runs/history.h"
#include "runs/history_writer.h"
#include "tests/runs/history_support.h"
#include "ui/runs/run_files.h"
#include "ui/runs/runs_panel.h"

namespace batchscope {
namespace {

// How late a 5 ms timer fires, as the event loop serves it.
class GapProbe {
 public:
  GapProbe() {
    timer_.setInterval(5);
    timer_.setTimerType(Qt::PreciseTimer);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.nsecsElapsed();
      if (last_ > 0) worst_ = std::max(worst_, now - last_ - 5'000'000);
      last_ = now;
      ++ticks_;
    });
  }
  void start() {
    worst_ = 0;
    last_ = 0;
    ticks_ = 0;
    clock_.start();
    timer_.start();
  }
  // The longest gap beyond the 5 ms interval, in milliseconds.
  double stop() {
    timer_.stop();
    return static_cast<double>(worst_) / 1e6;
  }
  long ticks() const { return ticks_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0, worst_ = 0;
  long ticks_ = 0;
};

// Runs the event loop with the probe on until `done()`, after `act()`.
double probe(GapProbe& p, const char* what, const std::function<void()>& act,
             const std::function<bool()>& done) {
  QElapsedTimer wall;
  wall.start();
  p.start();
  while (p.ticks() < 2) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
  act();
  while (!done()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
  // The tick after: a step done on this thread shows as that tick's lateness.
  const long after = p.ticks() + 2;
  while (p.ticks() < after) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
  const double worst = p.stop();
  std::printf("  %-40s longest GUI-thread stall %7.1f ms  (%ld ticks, %.2f s)\n", what, worst,
              p.ticks(), static_cast<double>(wall.elapsed()) / 1e3);
  return worst;
}

int run(int n, const std::string& program) {
  QTemporaryDir dir;
  const std::string path = dir.filePath("h.sqlite").toStdString();
  {
    auto h = History::open(path);
    if (!h) return std::fprintf(stderr, "%s\n", h.error().message.c_str()), 1;
    for (int k : {n, 2000}) {
      const RunData run = testing_history::sample_run(k);
      (*h)->begin();
      auto id = (*h)->begin_run(testing_history::header_of(run));
      (*h)->append(*id, run.start, run.requests, run.batches, run.depth);
      (*h)->finish_run(*id, run_summary_json(run, summarize_run(run)), run.requests.size(),
                       run.requests.size());
      if (Status s = (*h)->commit(); !s)
        return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    }
  }
  std::printf("gui_stall: a kept run of %d requests (and one of 2,000)\n", n);
  auto store = History::open(path);
  HistoryWriter writer(std::move(*store));
  RunsPanel panel;
  panel.resize(1200, 700);
  panel.show();
  panel.set_history(&writer);
  if (!program.empty()) panel.set_png_program(QString::fromStdString(program));
  if (panel.run_count() != 2) return std::fprintf(stderr, "listed %d runs\n", panel.run_count()), 1;
  const int big = panel.run(0).summary.sent == static_cast<uint64_t>(n) ? 0 : 1;
  GapProbe p;
  double worst = 0;
  QTemporaryDir out;
  worst = std::max(worst,
                   probe(
                       p, "export (read, write, draw)", [&] { panel.export_run(big, out.path()); },
                       [&] { return !panel.exporting(); }));
  const QString png = out.filePath(run_file_base(panel.run(big).name) + ".png");
  if (QImage(png).width() != 1400) {
    return std::fprintf(stderr, "no picture at %s\n", png.toStdString().c_str()), 1;
  }
  if (!panel.export_status().startsWith("Exported")) {
    return std::fprintf(stderr, "%s\n", panel.export_status().toStdString().c_str()), 1;
  }
  bool compared = false;
  worst = std::max(worst, probe(
                              p, "compare with another run",
                              [&] { compared = panel.compare(0, 1); }, [&] { return true; }));
  if (!compared) return std::fprintf(stderr, "compare failed\n"), 1;
  worst = std::max(worst,
                   probe(
                       p, "rename", [&] { panel.rename(big, "renamed"); }, [&] { return true; }));
  worst = std::max(worst, probe(
                              p, "remove", [&] { panel.remove_run(big); }, [&] { return true; }));
  writer.flush();
  panel.set_history(nullptr);
  std::printf("gui_stall: longest %.1f ms (target under 50 ms)\n", worst);
  return 0;
}

}  // namespace
}  // namespace batchscope

int main(int argc, char** argv) {
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  const int n = argc > 1 ? std::atoi(argv[1]) : 1'000'000;
  return batchscope::run(n > 0 ? n : 1'000'000, argc > 2 ? argv[2] : "");
}
