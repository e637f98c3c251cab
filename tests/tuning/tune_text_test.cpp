// SPDX-License-Identifier: GPL-3.0-or-later
// The front tables `batchscope tune` prints: rows spread over the front,
// points of the same figures shown once with how many more, the best marked
// and added at the end when the spread passed it by.
#include "tuning/tune_text.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

namespace batchscope {
namespace {

Evaluated text_point(uint32_t batch, double rps, double p99) {
  Evaluated e;
  e.options.max_batch_size = batch;
  e.throughput_rps = rps;
  e.p50_ms = p99 / 2;
  e.p99_ms = p99;
  e.sent = e.ok = 1000;
  return e;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

TEST(TuneText, SameFiguresShowOnceWithHowManyMoreAndTheBestIsMarked) {
  TuneResult r;
  r.pareto = {text_point(4, 1000, 2), text_point(8, 1000, 2), text_point(16, 1500, 3)};
  r.best = r.pareto[2];
  const auto lines = lines_of(front_text(r, 20));
  ASSERT_EQ(lines.size(), 4u) << front_text(r, 20);
  EXPECT_NE(lines[0].find("3 points, 2 distinct"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("p99 ms"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("(+1 alike)"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" *"), 0u) << "not the best: " << lines[2];
  EXPECT_EQ(lines[3].find(" *"), 0u) << lines[3];
  EXPECT_NE(lines[3].find("1500.0"), std::string::npos) << lines[3];
}

TEST(TuneText, ABestTheSpreadPassesByIsAddedAtTheEnd) {
  TuneResult r;
  for (uint32_t i = 1; i <= 10; ++i) r.pareto.push_back(text_point(i, 100.0 * i, i));
  r.best = r.pareto[1];  // the spread of 5 rows shows points 0, 2, 4, 6, 8
  const auto lines = lines_of(front_text(r, 5));
  ASSERT_EQ(lines.size(), 2u + 5u + 1u) << front_text(r, 5);
  for (size_t i = 2; i < 7; ++i) EXPECT_EQ(lines[i].find(" *"), std::string::npos) << lines[i];
  EXPECT_EQ(lines.back().find(" *"), 0u) << lines.back();
  EXPECT_NE(lines.back().find("200.0"), std::string::npos) << lines.back();
}

TEST(TuneText, AGenerativeFrontNamesTheQuantileOfItsObjective) {
  GenTuneResult r;
  r.slo.quantile = 95;
  GenEvaluated e;
  e.tokens_per_s = 100;
  e.goodput_rps = 2;
  r.pareto = {e, e};
  r.best = e;
  const auto lines = lines_of(front_text(r, 20));
  ASSERT_EQ(lines.size(), 3u) << front_text(r, 20);
  EXPECT_NE(lines[0].find("TTFT and ITL p95"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("TTFT p95"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2].find(" *"), 0u) << lines[2];
  EXPECT_NE(lines[2].find("(+1 alike)"), std::string::npos) << lines[2];
}

}  // namespace
}  // namespace batchscope
