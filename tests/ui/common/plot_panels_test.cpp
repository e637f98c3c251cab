// SPDX-License-Identifier: GPL-3.0-or-later
// The mouse readout of a stacked plot's panel: each graph's value in the bin
// under the mouse (a point's key is its bin's start), nothing where the mouse
// is left of a graph's first bin or the bin has no value, and nothing from a
// hidden or skipped graph. A panel's legend goes to the corner where it
// hides the fewest points.

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

// A line that starts high and falls: the legend leaves the top-left corner
// it starts in for one that hides nothing, stays there while it hides
// nothing, and hidden graphs do not count.
TEST(PlaceLegendClear, GoesToACornerThatHidesNoData) {
  QCustomPlot plot;
  prepare_stacked_plot(&plot, 400, 300);
  plot.resize(400, 300);
  QCPAxisRect* panel = add_panel(&plot, "req/s");
  plot.plotLayout()->addElement(0, 0, panel);
  QCPLegend* legend = panel_legend(panel);
  auto* falling = plot.addGraph(panel->axis(QCPAxis::atBottom), panel->axis(QCPAxis::atLeft));
  falling->setName("completed");
  legend->addItem(new QCPPlottableLegendItem(legend, falling));
  QVector<double> x, y;
  for (int i = 0; i <= 60; ++i) {
    x << i - 60;
    y << 100 - i * 1.5;  // 100 at -60 s down to 10 at now
  }
  falling->setData(x, y, true);
  panel->axis(QCPAxis::atBottom)->setRange(-60, 0);
  panel->axis(QCPAxis::atLeft)->setRange(0, 105);
  plot.replot();
  const int at = panel->insetLayout()->elements(false).indexOf(legend);
  ASSERT_GE(at, 0);
  ASSERT_EQ(panel->insetLayout()->insetAlignment(at), Qt::AlignTop | Qt::AlignLeft);

  EXPECT_EQ(place_legend_clear(panel, legend), 0);
  const Qt::Alignment moved = panel->insetLayout()->insetAlignment(at);
  EXPECT_NE(moved, Qt::AlignTop | Qt::AlignLeft);
  // Top-right (the line is low there) or bottom-left (it is high there).
  EXPECT_TRUE(moved == (Qt::AlignTop | Qt::AlignRight) ||
              moved == (Qt::AlignBottom | Qt::AlignLeft))
      << moved;
  plot.replot();
  EXPECT_EQ(place_legend_clear(panel, legend), 0);
  EXPECT_EQ(panel->insetLayout()->insetAlignment(at), moved);  // it stays

  // Data in every corner: the value axis grows at the top by the legend's
  // height and the legend goes there, over nothing; with the graph hidden
  // there is nothing to hide and it stays.
  QVector<double> fx, fy;
  for (int i = 0; i <= 600; ++i) {
    for (double v : {2.0, 52.0, 102.0}) {
      fx << -60 + i * 0.1;
      fy << v;
    }
  }
  falling->setData(fx, fy, false);
  EXPECT_EQ(place_legend_clear(panel, legend), 0);
  const QCPRange grown = panel->axis(QCPAxis::atLeft)->range();
  EXPECT_EQ(grown.lower, 0);
  EXPECT_GT(grown.upper, 110);
  EXPECT_TRUE(panel->insetLayout()->insetAlignment(at) & Qt::AlignTop);
  plot.replot();
  EXPECT_EQ(place_legend_clear(panel, legend), 0);  // over the new headroom
  EXPECT_EQ(panel->axis(QCPAxis::atLeft)->range(), grown);
  falling->setVisible(false);
  const Qt::Alignment before = panel->insetLayout()->insetAlignment(at);
  EXPECT_EQ(place_legend_clear(panel, legend), 0);
  EXPECT_EQ(panel->insetLayout()->insetAlignment(at), before);
}

}  // namespace
}  // namespace batchscope
