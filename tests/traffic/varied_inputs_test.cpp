// SPDX-License-Identifier: GPL-3.0-or-later
// The seeded inputs bench and the window send: a BYTES input is a printable
// string, whatever lengths the varied dimensions are drawn at.

#include "traffic/varied_inputs.h"

#include <gtest/gtest.h>

namespace batchscope {
namespace {

ModelMetadata text_and_tokens() {
  ModelMetadata m;
  m.name = "t";
  m.max_batch_size = 8;
  TensorSpec ids{"ids", DType::kInt64, {-1, -1}, false};
  ids.max_shape = {-1, 64};
  m.inputs = {TensorSpec{"text", DType::kBytes, {-1, 1}, false}, ids};
  m.outputs = {TensorSpec{"label", DType::kBytes, {-1}, false}};
  return m;
}

TEST(VariedInputs, ABytesInputIsSixteenPrintableCharactersAndNoLength) {
  const ModelMetadata m = text_and_tokens();
  ASSERT_TRUE(m.validate().ok()) << m.validate().message();
  const std::vector<Tensors> in = varied_inputs(m, default_lengths(m), 11, 64);
  const std::vector<uint32_t> lengths = varied_lengths(m, default_lengths(m), 11, 64);
  ASSERT_EQ(in.size(), 64u);
  bool differ = false;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(check_inputs(m, in[i]).ok()) << check_inputs(m, in[i]).message();
    EXPECT_EQ(in[i][0].dtype(), DType::kBytes);
    ASSERT_EQ(in[i][0].shape(), Shape{16});
    for (char c : in[i][0].byte_string()) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << int(c);
    // The length is the tokens', never the string's.
    EXPECT_EQ(request_length(m, in[i]), static_cast<uint32_t>(in[i][1].shape()[0]));
    EXPECT_EQ(lengths[i], request_length(m, in[i]));
    differ = differ || !(in[i][0] == in[0][0]);
  }
  EXPECT_TRUE(differ);  // each request its own string

  ModelMetadata only_text = m;
  only_text.inputs.pop_back();
  EXPECT_FALSE(has_variable_inputs(only_text));
  const Tensors one = random_inputs(only_text, 2);
  EXPECT_EQ(one[0].shape(), Shape{16});
  EXPECT_EQ(request_length(only_text, one), 0u);
}

}  // namespace
}  // namespace batchscope
