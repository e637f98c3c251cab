// SPDX-License-Identifier: GPL-3.0-or-later
// Language-model traces: each format read from a sample file and compared
// with its golden rendering (tests/traffic/traces/NAME.expected); bad rows
// named by line and quoted; fitting requests to a model's context.

#include "traffic/llm_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace batchscope {
namespace {

const std::string kTraces = std::string(BATCHSCOPE_TRACES);

// The format, then "at_ns prompt max_tokens" a request ("at_ns" alone
// without lengths).
std::string render(const LlmTrace& t) {
  std::ostringstream out;
  out << t.format << "\n";
  for (size_t i = 0; i < t.at.size(); ++i) {
    out << t.at[i].count();
    if (!t.lengths.empty()) out << " " << t.lengths[i].prompt << " " << t.lengths[i].max_tokens;
    out << "\n";
  }
  return out.str();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, ReadsTheSampleAsTheGoldenFileSays) {
  const std::string name = GetParam();
  auto t = load_llm_trace(kTraces + "/" + name);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const std::string stem = name.substr(0, name.find('.'));
  EXPECT_EQ(render(*t), read(kTraces + "/" + stem + ".expected"));
}

INSTANTIATE_TEST_SUITE_P(Formats, Golden,
                         ::testing::Values("azure.csv", "burstgpt.csv", "mooncake.jsonl",
                                           "timestamps.csv"),
                         [](const auto& info) {
                           return info.param.substr(0, info.param.find('.'));
                         });

TEST(LlmTrace, ColumnsAreFoundByNameInAnyOrderWithExtraOnesAndCrlf) {
  // BurstGPT's later releases add columns; a hand-made file may reorder them.
  auto t = parse_llm_trace(
      "Session ID,Response tokens,Timestamp,Request tokens,Elapsed time\r\n"
      "7,20,10.5,300,1.2\r\n"
      "8,30,11,400,0.9\r\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->format, "burstgpt");
  EXPECT_EQ(render(*t), "burstgpt\n0 300 20\n500000000 400 30\n");
}

TEST(LlmTrace, AzureDateTimesMayUseATAndAZoneLetter) {
  auto t = parse_llm_trace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2024-05-10T00:00:00Z,10,1\n"
      "2024-05-10T00:00:01.000000001Z,10,1\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->at[1].count(), 1'000'000'001);
}

struct BadCase {
  const char* text;
  const char* says;  // a piece of the message
};

TEST(LlmTrace, BadRowsAreNamedByLineAndQuoted) {
  const std::vector<BadCase> cases = {
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,2\nyesterday,3,4\n",
       "trace line 3: TIMESTAMP 'yesterday' is not a date-time"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-30 00:00:00,1,2\n",
       "trace line 2: TIMESTAMP '2023-02-30 00:00:00'"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n9999-12-31 23:59:59,1,2\n",
       "trace line 2: TIMESTAMP '9999-12-31 23:59:59' is not a date-time"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1.5,2\n",
       "trace line 2: ContextTokens '1.5' is not a whole number of tokens"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,-2\n",
       "GeneratedTokens '-2'"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1\n",
       "trace line 2: 2 columns, but the header has 3"},
      {"Timestamp,Model,Request tokens,Response tokens\n5,a,1,1\n\n4,a,1,1\n",
       "trace line 4: timestamp '4' is before the previous line's"},
      {"Timestamp,Model,Request tokens,Response tokens\nnan,a,1,1\n",
       "trace line 2: Timestamp 'nan' is not a number of seconds"},
      {"Timestamp,Model,Request tokens,Response tokens\n1,a,200000000,1\n",
       "Request tokens '200000000'"},
      {"{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 1,",
       "trace line 2: '{\"timestamp\": 1,' is not a JSON object"},
      {"{\"timestamp\": 0, \"input_length\": 1}\n", "trace line 1: no \"output_length\""},
      {"{\"timestamp\": \"0\", \"input_length\": 1, \"output_length\": 1}\n",
       "\"timestamp\" is '\"0\"', not a number"},
      {"{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1}\n",
       "timestamp '-1' ms is out of range"},
      {"{\"timestamp\": 0, \"input_length\": 1e30, \"output_length\": 1}\n",
       "input_length '1e+30'"},
      {"Timestamp,Model,Request tokens,Response tokens\n", "the burstgpt trace has no requests"},
      {"\n \n", "the trace is empty"},
      {"timestamp_us\n5\nx\n", "trace line 3: 'x' is not a number"},
  };
  for (const BadCase& c : cases) {
    auto t = parse_llm_trace(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.error().message.find(c.says), std::string::npos)
        << "message: " << t.error().message << "\nexpected a piece: " << c.says;
  }
}

TEST(LlmTrace, AMissingFileIsNamed) {
  auto t = load_llm_trace("/nonexistent/trace.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "cannot read /nonexistent/trace.csv");
}

TEST(LlmTrace, ALongCellIsQuotedInPart) {
  const std::string cell(500, '9');
  auto t = parse_llm_trace("Timestamp,Request tokens,Response tokens\n1," + cell + ",1\n");
  ASSERT_FALSE(t.ok());
  EXPECT_LT(t.error().message.size(), 200u) << t.error().message;
}

TEST(ContextFit, ClipsPromptsCutsOutputsAndRaisesZeros) {
  std::vector<GenLengths> l = {{10, 10}, {2000, 5}, {1000, 100}, {0, 0}, {5, 0}, {1023, 1}};
  const ContextFit fit = fit_to_context(l, 1024);
  EXPECT_EQ(fit.prompts_clipped, 1u);
  EXPECT_EQ(fit.outputs_cut, 2u);  // {1023, 5} and {1000, 100}
  EXPECT_EQ(fit.raised, 2u);
  const std::vector<std::pair<uint32_t, uint32_t>> want = {{10, 10}, {1023, 1}, {1000, 24},
                                                           {1, 1},   {5, 1},    {1023, 1}};
  for (size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].prompt, want[i].first) << i;
    EXPECT_EQ(l[i].max_tokens, want[i].second) << i;
    EXPECT_LE(l[i].prompt + l[i].max_tokens, 1024u);
  }
  EXPECT_EQ(fit.describe(1024),
            "1 prompt clipped to the model's context of 1024 tokens, 2 max_tokens cut so that "
            "prompt and output fit in it, 2 empty prompts or zero max_tokens raised to 1");
  EXPECT_FALSE(fit_to_context(l, 1024).any());
}

}  // namespace
}  // namespace batchscope
