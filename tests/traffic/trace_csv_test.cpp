// SPDX-License-Identifier: GPL-3.0-or-later
// The trace CSV reader: timestamps or gaps, with or without a header, CRLF,
// extra columns and blank lines; garbage refused naming the line (files
// are read by llm_trace.h's load_llm_trace).

#include "traffic/trace_csv.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace batchscope {
namespace {

std::vector<int64_t> counts(const std::vector<Duration>& v) {
  std::vector<int64_t> out;
  for (Duration d : v) out.push_back(d.count());
  return out;
}

TEST(TraceCsv, TimestampsWithoutHeader) {
  auto r = parse_trace_csv("0\n1500\n1500\n2000.5\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(counts(*r), (std::vector<int64_t>{0, 1'500'000, 1'500'000, 2'000'500}));
}

TEST(TraceCsv, TimestampHeaderExtraColumnsCrlfAndBlankLines) {
  auto r = parse_trace_csv("timestamp_us,prompt_tokens\r\n100,7\r\n\r\n250 , 9\r\n400");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(counts(*r), (std::vector<int64_t>{100'000, 250'000, 400'000}));
}

TEST(TraceCsv, InterarrivalHeaderSumsGaps) {
  // Non-decreasing values, but the header says they are gaps.
  auto r = parse_trace_csv("interarrival_us\n10\n20\n30\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(counts(*r), (std::vector<int64_t>{10'000, 30'000, 60'000}));
}

TEST(TraceCsv, UnsortedValuesWithoutHeaderAreGaps) {
  auto r = parse_trace_csv("some_column\n300\n100\n200\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(counts(*r), (std::vector<int64_t>{300'000, 400'000, 600'000}));
}

TEST(TraceCsv, RefusesGarbageNamingTheLine) {
  struct Case {
    const char* text;
    const char* names;
  };
  for (const Case& c : std::vector<Case>{
           {"timestamp_us\n1\n2\nabc\n", "line 4: 'abc' is not a number"},
           {"1\n\n2x\n", "line 3"},
           {"5\n-1\n", "line 2"},
           {"timestamp_us\n1\nnan\n", "line 3"},
           {"timestamp_us\n100\n50\n", "line 3: timestamp 50 us is before the previous 100"},
           {"1\n1e16\n", "line 2"},
           {"timestamp_us\n", "no arrivals"},
           {"", "no arrivals"},
       }) {
    auto r = parse_trace_csv(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.names), std::string::npos)
        << c.text << " -> " << r.error().message;
  }
}

}  // namespace
}  // namespace batchscope
