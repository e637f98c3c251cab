// SPDX-License-Identifier: GPL-3.0-or-later
// The tuner's search space: ranges, lists and step grids expanded into
// values, its size, the default space clipped to the model, the text form
// read back, and the combinations visited on top of the base options.

#include "tuning/tune_space.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace batchscope {
namespace {

std::vector<double> values_of(std::string_view text) {
  auto space = TuneSpace::parse(text);
  EXPECT_TRUE(space.ok()) << (space ? "" : space.error().message);
  if (!space) return {};
  EXPECT_EQ(space->dimensions().size(), 1u);
  return space->dimensions()[0].values;
}

using V = std::vector<double>;

TEST(TuneSpace, WholeRangesUsePowersOfTwoAndBothEnds) {
  EXPECT_EQ(values_of("max_batch_size=1..256"), (V{1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(values_of("max_batch_size=3..100"), (V{3, 4, 8, 16, 32, 64, 100}));
  EXPECT_EQ(values_of("max_batch_size=1..17"), (V{1, 2, 4, 8, 16, 17}));
  EXPECT_EQ(values_of("queue_capacity=100..1000"), (V{100, 128, 256, 512, 1000}));
}

TEST(TuneSpace, NarrowWholeRangesListEveryValue) {
  EXPECT_EQ(values_of("lanes=1..4"), (V{1, 2, 3, 4}));
  EXPECT_EQ(values_of("max_batch_size=1..16").size(), 16u);
  EXPECT_EQ(values_of("max_wait_us=0..10"), (V{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(values_of("max_batch_size=7..7"), (V{7}));
  auto space = TuneSpace::parse("lanes=1..2");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->dimensions()[0].name, "num_lanes");
  EXPECT_EQ(space->dimensions()[0].field, "num_lanes");
  EXPECT_EQ(space->dimensions()[0].entry, "lanes=1..2");
}

TEST(TuneSpace, WaitAndFractionalRangesUseASeries) {
  EXPECT_EQ(values_of("max_wait_ms=0..20"), (V{0, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20}));
  EXPECT_EQ(values_of("max_wait_us=0..20000"),
            (V{0, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}));
  // A narrower ratio takes a denser series.
  EXPECT_EQ(values_of("max_wait_ms=1..20"), (V{1, 1.5, 2, 3, 5, 7, 10, 15, 20}));
  EXPECT_EQ(values_of("target_p99_ms=10..1000"), (V{10, 20, 50, 100, 200, 500, 1000}));
  // Seven decades of 1-2-5 are thinned evenly to eight values between the ends.
  EXPECT_EQ(values_of("max_wait_us=1..10000000"),
            (V{1, 2, 20, 100, 1000, 10000, 100000, 500000, 5000000, 10000000}));
  auto space = TuneSpace::parse("max_wait_ms=0..20");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->dimensions()[0].field, "max_wait_us");
}

TEST(TuneSpace, ListsAndSingleValues) {
  EXPECT_EQ(values_of("max_batch_size=64|8|8|16"), (V{8, 16, 64}));
  EXPECT_EQ(values_of("max_batch_size=32"), (V{32}));
  EXPECT_EQ(values_of(" max_wait_ms = 0.5 | 2 "), (V{0.5, 2}));
  auto space = TuneSpace::parse("strategy=adaptive|fifo|adaptive,scheduling=static");
  ASSERT_TRUE(space.ok());
  const auto& strategy = space->dimensions()[0];
  ASSERT_EQ(strategy.size(), 2u);
  EXPECT_EQ(strategy.value_text(0), "adaptive");
  EXPECT_EQ(strategy.value_text(1), "fifo");
  EXPECT_EQ(space->dimensions()[1].value_text(0), "static");
}

TEST(TuneSpace, StepGridsAreArithmetic) {
  EXPECT_EQ(values_of("max_batch_size=8..40:8"), (V{8, 16, 24, 32, 40}));
  EXPECT_EQ(values_of("max_batch_size=1..10:4"), (V{1, 5, 9}));  // HI off the grid
  EXPECT_EQ(values_of("max_wait_ms=0..1:0.25"), (V{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(values_of("max_wait_ms=0..0.3:0.1"), (V{0, 0.1, 0.2, 0.3}));
  // max_wait is kept in whole microseconds: a finer grid is 0, 1, 2, 3 us.
  EXPECT_EQ(values_of("max_wait_ms=0..0.003:0.0001").size(), 4u);
}

struct SpaceError {
  const char* text;
  const char* message;  // the error must contain this
};

class TuneSpaceErrors : public ::testing::TestWithParam<SpaceError> {};

TEST_P(TuneSpaceErrors, NameTheEntryAndQuoteIt) {
  auto space = TuneSpace::parse(GetParam().text);
  ASSERT_FALSE(space.ok()) << GetParam().text;
  EXPECT_EQ(space.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(space.error().message.find(GetParam().message), std::string::npos)
      << space.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, TuneSpaceErrors,
    ::testing::Values(
        SpaceError{"colour=1..2", "space entry 'colour=1..2': unknown option 'colour'; known:"},
        SpaceError{"max_batch_size=1..x", "space entry 'max_batch_size=1..x': 'x' is not a number"},
        SpaceError{"max_batch_size=4|z", "'z' is not a number"},
        SpaceError{"max_batch_size=256..1", "'max_batch_size=256..1': LO 256 is above HI 1"},
        SpaceError{"max_batch_size=0..256",
                   "max_batch_size = 0 is out of range; allowed 1 to 4096"},
        SpaceError{"lanes=1..65", "'lanes=1..65': lanes = 65 is out of range; allowed 1 to 64"},
        SpaceError{"max_wait_ms=-1..5", "max_wait_ms = -1 is out of range; allowed 0 to 10000"},
        SpaceError{"max_batch_size=1.5", "max_batch_size must be a whole number, got 1.5"},
        SpaceError{"max_batch_size=", "'max_batch_size=': no values after '='"},
        SpaceError{"max_batch_size=1|", "'max_batch_size=1|': an empty value in the list"},
        SpaceError{"strategy=fifo|greedy", "unknown strategy 'greedy'; allowed fifo|adaptive"},
        SpaceError{"strategy=fifo..adaptive",
                   "strategy takes a list such as fifo|adaptive, not a range"},
        SpaceError{"lanes=1..2,num_lanes=1",
                   "space entry 'num_lanes=1': num_lanes is already searched by 'lanes=1..2'"},
        SpaceError{"max_wait_ms=1,max_wait_us=5",
                   "max_wait_us is already searched by 'max_wait_ms=1'"},
        SpaceError{"max_batch_size", "'max_batch_size': expected NAME=VALUES"},
        SpaceError{"max_batch_size=1..8:0", "step 0 must be above 0"},
        SpaceError{"max_batch_size=1..8:1.5", "step 1.5 must be a whole number for max_batch_size"},
        SpaceError{"max_batch_size=1..8:q", "step 'q' is not a number"},
        SpaceError{"max_wait_ms=0..10000:0.001", "the grid has 10000001 values; at most 1000000"},
        SpaceError{"", "the space is empty"},
        SpaceError{"max_batch_size=8,,lanes=1",
                   "an empty entry in the space 'max_batch_size=8,,lanes=1'"}));

TEST(TuneSpace, SizeMultipliesAndSaturates) {
  EXPECT_EQ(TuneSpace::default_space(0).size(), 9u * 10 * 2 * 2);
  auto huge = TuneSpace::parse(
      "max_batch_size=1..4096:1,queue_capacity=1..1000000:1,"
      "request_timeout_ms=1..1000000:1,max_num_batched_tokens=1..1000000:1");
  ASSERT_TRUE(huge.ok()) << huge.error().message;
  EXPECT_EQ(huge->size(), std::numeric_limits<uint64_t>::max());
}

TEST(TuneSpace, DefaultSpaceIsClippedToTheModel) {
  EXPECT_EQ(TuneSpace::default_text(0),
            "max_batch_size=1..256,max_wait_ms=0..20,strategy=fifo|adaptive,lanes=1..2");
  EXPECT_EQ(TuneSpace::default_text(1000), TuneSpace::default_text(0));
  EXPECT_EQ(TuneSpace::default_space(64).dimensions()[0].values, (V{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(TuneSpace::default_space(48).dimensions()[0].values, (V{1, 2, 4, 8, 16, 32, 48}));
  EXPECT_EQ(TuneSpace::default_space(1).dimensions()[0].values, (V{1}));
}

TEST(TuneSpace, TextListsTheExpandedValuesAndReadsBack) {
  auto space = TuneSpace::parse("lanes=1..2,strategy=fifo|adaptive,max_wait_ms=0..1:0.5");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->text(), "num_lanes=1|2,strategy=fifo|adaptive,max_wait_ms=0|0.5|1");
  auto back = TuneSpace::parse(space->text());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->text(), space->text());
  EXPECT_TRUE(space->searches("max_wait_us"));
  EXPECT_FALSE(space->searches("max_batch_size"));
}

TEST(TuneSpace, ForEachVisitsValidCombinationsOnTopOfTheBase) {
  auto space = TuneSpace::parse("max_num_seqs=16|64,max_num_batched_tokens=32|128,lanes=1..2");
  ASSERT_TRUE(space.ok());
  Options base;
  base.queue_capacity = 77;
  std::vector<Options> seen;
  const TuneEnumeration e = space->for_each(base, [&](const Options& o) { seen.push_back(o); });
  EXPECT_EQ(space->size(), 8u);
  EXPECT_EQ(e.visited, 6u);
  EXPECT_EQ(e.invalid, 2u);  // 64 sequences cannot decode in 32 tokens a step
  EXPECT_FALSE(e.stopped);
  ASSERT_EQ(seen.size(), 6u);
  for (const Options& o : seen) {
    EXPECT_EQ(o.queue_capacity, 77u);
    EXPECT_TRUE(o.validate().ok());
  }
  // The last entry turns fastest.
  EXPECT_EQ(seen[0].max_num_seqs, 16u);
  EXPECT_EQ(seen[0].max_num_batched_tokens, 32u);
  EXPECT_EQ(seen[0].num_lanes, 1u);
  EXPECT_EQ(seen[1].num_lanes, 2u);
  EXPECT_EQ(seen[2].max_num_batched_tokens, 128u);
  EXPECT_EQ(seen[4].max_num_seqs, 64u);
}

TEST(TuneSpace, ForEachStopsWhenTheCallbackSaysSo) {
  int calls = 0;
  const TuneEnumeration e =
      TuneSpace::default_space(0).for_each(Options{}, [&](const Options&) { return ++calls < 3; });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(e.visited, 3u);
  EXPECT_TRUE(e.stopped);
}

TEST(TuneSpace, AdaptiveCombinationsTargetTheSlo) {
  auto space = TuneSpace::parse("strategy=fifo|adaptive");
  ASSERT_TRUE(space.ok());
  std::vector<Options> seen;
  space->for_each(
      Options{}, [&](const Options& o) { seen.push_back(o); }, 12.5);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].target_p99_ms, Options{}.target_p99_ms);  // fifo: untouched
  EXPECT_EQ(seen[1].target_p99_ms, 12.5);
  // A space that searches target_p99_ms keeps its own values.
  auto explicit_target = TuneSpace::parse("strategy=adaptive,target_p99_ms=5|10");
  ASSERT_TRUE(explicit_target.ok());
  seen.clear();
  explicit_target->for_each(
      Options{}, [&](const Options& o) { seen.push_back(o); }, 12.5);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].target_p99_ms, 5);
  EXPECT_EQ(seen[1].target_p99_ms, 10);
}

TEST(TuneSpace, SearchesThePaddingPolicyAndItsBuckets) {
  auto space = TuneSpace::parse("padding=longest|buckets|sorted,length_buckets=32/64/256|64/256");
  ASSERT_TRUE(space.ok()) << space.error().message;
  EXPECT_EQ(space->size(), 6u);
  EXPECT_EQ(space->text(), "padding=longest|buckets|sorted,length_buckets=32/64/256|64/256");
  std::vector<Options> seen;
  space->for_each(Options{}, [&](const Options& o) { seen.push_back(o); });
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[2].padding, Padding::kBuckets);
  EXPECT_EQ(length_buckets_text(seen[2]), "32,64,256");
  EXPECT_EQ(length_buckets_text(seen[3]), "64,256");
  // length_buckets does nothing without buckets: those combinations share
  // the first set's index.
  const std::vector<size_t> sorted_second = {2, 1}, buckets_second = {1, 1};
  EXPECT_EQ(space->canonical(sorted_second, Options{}), (std::vector<size_t>{2, 0}));
  EXPECT_EQ(space->canonical(buckets_second, Options{}), buckets_second);
}

TEST(TuneSpace, RefusesABadPaddingOrBucketSetQuotingIt) {
  auto bad = TuneSpace::parse("padding=longest|widest");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown padding 'widest'"), std::string::npos)
      << bad.error().message;
  auto falling = TuneSpace::parse("length_buckets=64/32");
  ASSERT_FALSE(falling.ok());
  EXPECT_NE(falling.error().message.find("'64/32'"), std::string::npos) << falling.error().message;
}

TEST(TuneSpace, PaddingEntriesFollowTheTrafficsLengths) {
  std::vector<uint32_t> lengths;
  for (uint32_t l = 1; l <= 200; ++l) lengths.push_back(l);
  const std::string text = TuneSpace::padding_text(lengths);
  EXPECT_EQ(text,
            "padding=longest|buckets|sorted,length_buckets=32/64/128/200|51/101/151/200|101/200");
  ASSERT_TRUE(TuneSpace::parse(text).ok());
  EXPECT_EQ(TuneSpace::padding_text({}), "");
}

}  // namespace
}  // namespace batchscope
