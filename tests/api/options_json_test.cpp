// SPDX-License-Identifier: GPL-3.0-or-later
// Options as JSON: every document Batchscope writes reads back, and values
// out of range are refused as sent, before any conversion.

#include <gtest/gtest.h>

#include "api/options_json.h"

namespace batchscope {
namespace {

TEST(OptionsJson, TheConfigDocumentReadsAsItsOptions) {
  Options o;
  o.max_batch_size = 7;
  o.strategy = StrategyKind::kAdaptive;
  const std::string doc = "{\"version\": 12, \"options\": " + options_to_json(o) + "}";
  auto back = options_from_json(doc, Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, o);
  // A partial document changes only what it names.
  auto partial = options_from_json(R"({"options": {"num_lanes": 2}})", o);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->num_lanes, 2u);
  EXPECT_EQ(partial->max_batch_size, 7u);
}

TEST(OptionsJson, ThePaddingPolicyAndItsBucketsReadBackAndBadOnesAreNamed) {
  Options o;
  o.padding = Padding::kBuckets;
  ASSERT_TRUE(parse_length_buckets("16,48,200", o).ok());
  auto back = options_from_json(options_to_json(o), Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, o);
  EXPECT_EQ(length_buckets_text(*back), "16,48,200");
  EXPECT_EQ(length_bucket(*back, 16), 0u);
  EXPECT_EQ(length_bucket(*back, 17), 1u);
  EXPECT_EQ(length_bucket(*back, 201), 3u);
  EXPECT_NE(describe(*back).find("padding=buckets length_buckets=16,48,200"), std::string::npos);

  auto policy = options_from_json(R"({"padding": "shortest"})", Options{});
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.error().message.find("got 'shortest'"), std::string::npos)
      << policy.error().message;
  auto falling = options_from_json(R"({"length_buckets": [64, 32]})", Options{});
  ASSERT_FALSE(falling.ok());
  EXPECT_NE(falling.error().message.find("'64,32': the lengths must rise"), std::string::npos)
      << falling.error().message;
  auto zero = options_from_json(R"({"length_buckets": [0, 32]})", Options{});
  ASSERT_FALSE(zero.ok());
  auto many = options_from_json(R"({"length_buckets": [1,2,3,4,5,6,7,8,9]})", Options{});
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("at most 8 buckets"), std::string::npos);
  auto frac = options_from_json(R"({"length_buckets": [1.5]})", Options{});
  ASSERT_FALSE(frac.ok());
  EXPECT_NE(frac.error().message.find("[1.5]"), std::string::npos) << frac.error().message;
}

TEST(OptionsJson, ATunesResultReadsAsItsBestOptions) {
  Options o;
  o.scheduling = Scheduling::kStatic;
  o.max_num_seqs = 12;
  const std::string tune =
      "{\"kind\": \"generation\", \"space\": \"max_num_seqs=12\", "
      "\"best\": {\"options\": " +
      options_to_json(o) + ", \"predicted\": {}}, \"pareto\": []}";
  auto back = options_from_json(tune, Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, o);
  // A tune that found nothing is refused with its error.
  auto none = options_from_json(
      R"({"space": "x", "best": null, "error": "no configuration meets TTFT p99 <= 1 ms"})", {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("the tune found no configuration: 'no configuration meets"),
            std::string::npos)
      << none.error().message;
  auto bad = options_from_json(R"({"space": "x", "best": {"options": 3}})", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("must hold an 'options' object"), std::string::npos);
}

TEST(OptionsJson, AMalformedDocumentIsRefusedByName) {
  EXPECT_NE(options_from_json(R"({"options": 3})", {}).error().message.find("'options' must be"),
            std::string::npos);
  EXPECT_NE(options_from_json(R"({"version": "x", "options": {}})", {})
                .error()
                .message.find("'version' must be a number"),
            std::string::npos);
  EXPECT_NE(options_from_json(R"({"options": {}, "extra": 1})", {})
                .error()
                .message.find("unknown field 'extra'"),
            std::string::npos);
  // Without "options", "version" is just an unknown option.
  EXPECT_NE(options_from_json(R"({"version": 1})", {}).error().message.find("unknown option"),
            std::string::npos);
}

TEST(OptionsJson, NumbersAreRangeCheckedBeforeConversion) {
  struct Case {
    const char* json;
    const char* says;
  };
  const Case cases[] = {
      {R"({"max_wait_us": 1e300})", "max_wait_us = 1e+300 is out of range; allowed 0 to 10000000"},
      {R"({"max_wait_us": -1e300})", "max_wait_us = -1e+300 is out of range"},
      {R"({"max_batch_size": -3})", "max_batch_size = -3 is out of range"},
      {R"({"max_batch_size": 4294967297})", "max_batch_size = 4294967297 is out of range"},
      {R"({"max_wait_ms": 10000.5})", "max_wait_ms = 10000.5 is out of range; allowed 0 to 10000"},
      {R"({"num_lanes": 1.5})", "num_lanes must be a whole number, got 1.5"},
      {R"({"max_batch_size": "8"})", "max_batch_size must be a whole number"},
      {R"({"target_p99_ms": 1e999})", "not valid JSON"},
  };
  for (const Case& c : cases) {
    auto r = options_from_json(c.json, Options{});
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  auto edge = options_from_json(R"({"max_wait_ms": 10000, "max_batch_size": 4096})", Options{});
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(edge->max_wait_us, 10'000'000);
}

}  // namespace
}  // namespace batchscope
