// SPDX-License-Identifier: GPL-3.0-or-later
// write_gen_run_plot(): a hand-built generation run, with and without step
// records, renders to a PNG of the asked-for size; a path that cannot be
// written gives an error naming it.
#include "ui/generation/gen_run_plot.h"

#include <gtest/gtest.h>

#include <QImage>
#include <QTemporaryDir>

#include <string>

namespace batchscope {
namespace {

using std::chrono::milliseconds;

// 60 requests over 3 s, 20 tokens each, 30 ms first token then 10 ms gaps;
// with `steps`, one engine step every 10 ms.
GenRun make_run(bool steps) {
  GenRun run;
  run.pattern = "poisson 20 rps for 3 s";
  run.target = steps ? "inproc" : "http://example.com/v1/completions";
  run.model = "synthetic-lm";
  run.options = "max 8 sequences";
  run.start = TimePoint(std::chrono::seconds(500));
  for (int i = 0; i < 60; ++i) {
    GenRequestResult r;
    r.intended = milliseconds(50 * i);
    r.prompt_tokens = 16;
    r.max_tokens = r.output_tokens = 20;
    r.done = r.ok = true;
    r.outcome = "length";
    r.first = run.start + r.intended + milliseconds(30 + i % 7);
    for (int k = 1; k < 20; ++k) r.gaps.push_back(milliseconds(10 + (i + k) % 5));
    r.last = r.first;
    for (Duration g : r.gaps) r.last += g;
    r.finished = r.last;
    run.requests.push_back(r);
  }
  if (steps) {
    for (int i = 0; i < 330; ++i) {
      StepRecord st;
      st.step = uint64_t(i);
      st.start = run.start + milliseconds(10 * i);
      st.end = st.start + milliseconds(9);
      st.running = uint32_t(4 + i % 3);
      st.decodes = st.running - 1;
      st.blocks_used = 10 + uint32_t(i % 20);
      st.blocks_total = 64;
      run.steps.push_back(st);
    }
  }
  return run;
}

TEST(GenRunPlot, WritesAPngOfTheAskedForSize) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  for (bool steps : {true, false}) {
    const GenRun run = make_run(steps);
    const GenSummary s = summarize_gen(run, 0, 0);
    const std::string path = dir.filePath(steps ? "steps.png" : "http.png").toStdString();
    ASSERT_TRUE(write_gen_run_plot(run, s, path, 1000, 900).ok()) << path;
    QImage image;
    ASSERT_TRUE(image.load(QString::fromStdString(path)));
    EXPECT_EQ(image.width(), 1000);
    EXPECT_EQ(image.height(), 900);
    // Something beyond a white page was drawn.
    int coloured = 0;
    for (int y = 0; y < image.height(); y += 4)
      for (int x = 0; x < image.width(); x += 4)
        if (image.pixelColor(x, y).saturation() > 60) ++coloured;
    EXPECT_GT(coloured, 200);
  }
}

TEST(GenRunPlot, UnwritablePathNamesIt) {
  const GenRun run = make_run(true);
  const std::string path = "/nonexistent-dir/batchscope/plot.png";
  const Status s = write_gen_run_plot(run, summarize_gen(run, 0, 0), path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

}  // namespace
}  // namespace batchscope
