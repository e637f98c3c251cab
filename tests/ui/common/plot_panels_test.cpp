// SPDX-License-Identifier: GPL-3.0-or-later
// The mouse readout of a stacked plot's panel: each graph's value in the bin
// under the mouse (a point's key is its bin's start), nothing where the mouse
// is left of a graph's first bin or the bin has no value, and nothing from a
// hidden or skipped graph.

#include "ui/common/plot_panels.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <cmath>

namespace batchscope {
namespace {

class HoverReadout : public ::testing::Test {
 protected:
  void SetUp() override {
    prepare_stacked_plot(&plot_, 400, 300);
    panel_ = add_panel(&plot_, "ms");
    plot_.plotLayout()->addElement(0, 0, panel_);
    p50_ = graph("p50", {-3, -2, -1}, {1.5, std::nan(""), 2.25});
    p99_ = graph("p99", {-2, -1}, {7, 8});
  }
  QCPGraph* graph(const QString& name, QVector<double> x, QVector<double> y) {
    auto* g = plot_.addGraph(panel_->axis(QCPAxis::atBottom), panel_->axis(QCPAxis::atLeft));
    g->setName(name);
    g->setData(x, y, true);
    return g;
  }
  QCustomPlot plot_;
  QCPAxisRect* panel_ = nullptr;
  QCPGraph* p50_ = nullptr;
  QCPGraph* p99_ = nullptr;
};

TEST_F(HoverReadout, ReadsTheBinUnderTheMouse) {
  EXPECT_EQ(hover_readout(panel_, -2.5), "2.5 s ago\np50: 1.5");
  EXPECT_EQ(hover_readout(panel_, -0.5), "0.5 s ago\np50: 2.25\np99: 8");
}

TEST_F(HoverReadout, ABinWithoutAValueReadsNothing) {
  EXPECT_EQ(hover_readout(panel_, -1.5), "1.5 s ago\np99: 7");
}

TEST_F(HoverReadout, LeftOfTheFirstBinThereIsNothingToRead) {
  EXPECT_EQ(hover_readout(panel_, -2.5), "2.5 s ago\np50: 1.5");  // p99 starts at -2
  EXPECT_EQ(hover_readout(panel_, -9), "9.0 s ago");
}

TEST_F(HoverReadout, HiddenAndSkippedGraphsAreLeftOut) {
  p99_->setVisible(false);
  EXPECT_EQ(hover_readout(panel_, -0.5), "0.5 s ago\np50: 2.25");
  p99_->setVisible(true);
  EXPECT_EQ(hover_readout(panel_, -0.5, p50_), "0.5 s ago\np99: 8");
}

}  // namespace
}  // namespace batchscope
