// SPDX-License-Identifier: GPL-3.0-or-later
// The protobuf text-format reader on its own: the syntax config.pbtxt files
// use, line numbers, and refusals.

#include "export/pbtxt.h"

#include <gtest/gtest.h>

namespace batchscope {
namespace {

using Kind = PbField::Kind;

TEST(Pbtxt, ReadsFieldsBlocksListsAndComments) {
  auto doc = parse_pbtxt(R"(# comment
name: "m"  # trailing comment
max_batch_size: 8,
input [
  { name: "a" dims: [ 3, -1 ] },
  < name: 'b'; dims: 1 >
]
dynamic_batching: { preserve_ordering: true }
)");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  const auto& f = *doc;
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].name, "name");
  EXPECT_EQ(f[0].kind, Kind::kString);
  EXPECT_EQ(f[0].text, "m");
  EXPECT_EQ(f[0].line, 2);
  EXPECT_EQ(f[1].kind, Kind::kNumber);
  EXPECT_EQ(f[1].text, "8");
  EXPECT_EQ(f[1].line, 3);
  // A list of blocks is one field per element, as protobuf reads it.
  EXPECT_EQ(f[2].name, "input");
  EXPECT_EQ(f[2].kind, Kind::kMessage);
  EXPECT_EQ(f[2].line, 5);
  ASSERT_EQ(f[2].fields.size(), 3u);
  EXPECT_EQ(f[2].fields[1].text, "3");
  EXPECT_EQ(f[2].fields[2].text, "-1");
  EXPECT_EQ(f[3].name, "input");
  EXPECT_EQ(f[3].line, 6);
  EXPECT_EQ(f[3].fields[0].text, "b");
  EXPECT_EQ(f[4].kind, Kind::kMessage);
  ASSERT_EQ(f[4].fields.size(), 1u);
  EXPECT_EQ(f[4].fields[0].kind, Kind::kIdentifier);
  EXPECT_EQ(f[4].fields[0].text, "true");
}

TEST(Pbtxt, StringsDecodeEscapesAndJoinAdjacentLiterals) {
  auto doc = parse_pbtxt(R"(s: "a\"b\\c\n\x41\101\u00e9" 'd' "e")");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)[0].text,
            "a\"b\\c\nAA\xc3\xa9"
            "de");
}

TEST(Pbtxt, NumbersInTheirForms) {
  auto doc = parse_pbtxt("a: 0x1F b: -2.5e-3 c: 1.0f d: .5 e: -inf f: 017");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)[0].text, "0x1F");
  EXPECT_EQ((*doc)[1].text, "-2.5e-3");
  EXPECT_EQ((*doc)[2].text, "1.0f");
  EXPECT_EQ((*doc)[3].text, ".5");
  EXPECT_EQ((*doc)[4].kind, Kind::kIdentifier);
  EXPECT_EQ((*doc)[5].text, "017");
}

TEST(Pbtxt, EmptyListsAndEmptyInput) {
  auto doc = parse_pbtxt("dims: [ ]\ninput [ ]\n");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_TRUE(doc->empty());
  auto empty = parse_pbtxt("  # only a comment\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(Pbtxt, RefusesMalformedTextNamingTheLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {
           Case{"a {\n b: 1\n", "line 3: the block opened on line 1 is not closed with '}'"},
           Case{"a < b: 1 }", "line 1: expected '>' to close the block opened on line 1"},
           Case{"a: [ 1 2 ]", "line 1: expected ',' or ']' in the list 'a', found '2'"},
           Case{"a [ 1 ]", "line 1: expected '{' in the list 'a'"},
           Case{"a: 1e", "'1e' is not a number"},
           Case{"a: \"\\q\"", "unknown escape \\q"},
           Case{"a: \"\\u12\"", "bad \\u escape"},
           Case{"a: 1\n: 2", "line 2: expected a field name, found ':'"},
           Case{"a: 1\n\n\"s\"", "line 3: expected a field name, found a string"},
           Case{"a: \x01", "unexpected byte 0x01"},
       }) {
    auto doc = parse_pbtxt(c.text);
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_NE(doc.error().message.find(c.expect), std::string::npos)
        << c.text << " -> " << doc.error().message;
  }
}

TEST(Pbtxt, RefusesNestingBeyondItsLimit) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "a {";
  for (int i = 0; i < 100; ++i) deep += "}";
  auto doc = parse_pbtxt(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message.find("64 deep"), std::string::npos);
  std::string fine;
  for (int i = 0; i < 60; ++i) fine += "a {";
  for (int i = 0; i < 60; ++i) fine += "}";
  EXPECT_TRUE(parse_pbtxt(fine).ok());
}

}  // namespace
}  // namespace batchscope
