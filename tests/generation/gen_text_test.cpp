// SPDX-License-Identifier: GPL-3.0-or-later
// Streamed text: whole characters, stop strings held back, sampling.
#include <gtest/gtest.h>

#include "generation/gen_sampling.h"
#include "generation/gen_text.h"

namespace batchscope {
namespace {

std::string feed(TextStream& t, std::string_view bytes,
                 std::vector<std::string>* pieces = nullptr) {
  std::string out;
  for (char c : bytes) {
    std::string p = t.push(static_cast<uint8_t>(c));
    if (pieces && !p.empty()) pieces->push_back(p);
    out += p;
  }
  return out;
}

TEST(TextStream, PassesPlainTextThroughByteByByte) {
  TextStream t;
  std::vector<std::string> pieces;
  EXPECT_EQ(feed(t, "abc", &pieces), "abc");
  EXPECT_EQ(pieces.size(), 3u);
  EXPECT_EQ(t.finish(), "");
}

TEST(TextStream, HoldsAnIncompleteCharacterUntilItsLastByte) {
  TextStream t;
  std::vector<std::string> pieces;
  EXPECT_EQ(feed(t,
                 "a\xC3\xA9"
                 "b",
                 &pieces),
            "a\xC3\xA9"
            "b");
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[1], "\xC3\xA9");
}

TEST(TextStream, ReplacesBytesThatCannotBeUtf8) {
  TextStream t;
  EXPECT_EQ(feed(t,
                 "a\xFF"
                 "b"),
            "a\xEF\xBF\xBD"
            "b");
  TextStream u;
  EXPECT_EQ(feed(u, "a\xE2\x82"), "a");
  EXPECT_EQ(u.finish(), "\xEF\xBF\xBD");  // cut off mid-character
  TextStream v;
  EXPECT_EQ(feed(v, "\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

TEST(TextStream, AStopStringEndsTheTextAndIsNeverSent) {
  TextStream t({"END"});
  std::vector<std::string> pieces;
  EXPECT_EQ(feed(t, "abEN", &pieces), "ab");  // "EN" could begin "END": held back
  EXPECT_FALSE(t.stopped());
  EXPECT_EQ(feed(t, "Dxyz", &pieces), "");
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(t.text(), "ab");
  EXPECT_EQ(t.finish(), "");
}

TEST(TextStream, HeldTextGoesOutOnceItCannotBeAStopString) {
  TextStream t({"END", "\n\n"});
  EXPECT_EQ(feed(t, "aE"), "a");
  EXPECT_EQ(feed(t, "Nx"), "ENx");
  EXPECT_EQ(feed(t, "\n"), "");
  EXPECT_EQ(feed(t, "y"), "\ny");
  EXPECT_EQ(feed(t, "E"), "");
  EXPECT_EQ(t.finish(), "E");  // the end: what was held is sent
  EXPECT_EQ(t.text(), "aENx\nyE");
}

TEST(TextStream, TheEarliestOfSeveralStopStringsWins) {
  TextStream t({"cd", "bcde"});
  EXPECT_EQ(feed(t, "abcde"), "ab");
  EXPECT_TRUE(t.stopped());
}

TEST(Sampling, ZeroTemperatureIsTheMostLikelyTokenAndSkipsNaN) {
  std::mt19937_64 rng(1);
  std::vector<std::pair<float, int32_t>> scratch;
  const std::vector<float> row = {0.5f, NAN, 3.0f, 3.0f, -1.0f};
  Sampling greedy;
  greedy.temperature = 0;
  EXPECT_EQ(sample_token(row, greedy, kNoToken, rng, scratch), 2);  // ties: the lower id
  EXPECT_EQ(sample_token(row, greedy, 2, rng, scratch), 3);         // 2 banned
  const std::vector<float> none = {NAN, -INFINITY};
  EXPECT_EQ(sample_token(none, greedy, kNoToken, rng, scratch), kNoToken);
}

TEST(Sampling, TopPKeepsOnlyTheNucleusAndASeedRepeats) {
  std::vector<std::pair<float, int32_t>> scratch;
  const std::vector<float> row = {5.0f, 4.9f, 0.0f, 0.0f, 0.0f};
  Sampling s;
  s.temperature = 1.0;
  s.top_p = 0.5;  // token 0 alone holds more than half
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(sample_token(row, s, kNoToken, rng, scratch), 0);
  s.top_p = 0.9;  // 0 and 1
  std::vector<int32_t> a, b;
  std::mt19937_64 r1(42), r2(42);
  int ones = 0;
  for (int i = 0; i < 400; ++i) {
    a.push_back(sample_token(row, s, kNoToken, r1, scratch));
    b.push_back(sample_token(row, s, kNoToken, r2, scratch));
    ASSERT_LE(a.back(), 1);
    ones += a.back() == 1;
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(ones, 120);  // about 47.5% of 400
  EXPECT_LT(ones, 260);
}

}  // namespace
}  // namespace batchscope
