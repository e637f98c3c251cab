// SPDX-License-Identifier: GPL-3.0-or-later
// The region's table as this side writes and reads it; what a worker
// answers is checked against the region and the model before it is used.
#include "python/worker_protocol.h"

#include <gtest/gtest.h>

#include <vector>

namespace batchscope::worker {
namespace {

ModelMetadata model() {
  ModelMetadata m;
  m.name = "m";
  m.max_batch_size = 8;
  m.inputs = {{.name = "x", .dtype = DType::kFloat32, .shape = {-1, 4}}};
  m.outputs = {{.name = "y", .dtype = DType::kInt64, .shape = {-1, -1}}};
  return m;
}

TEST(WorkerProtocol, AnEntryReadsBackAsItWasWritten) {
  std::vector<std::byte> region(kHeaderBytes + 4096);
  ASSERT_TRUE(init_header(region.data(), region.size(), "{}").ok());
  EXPECT_EQ(get_u32(region.data(), kFieldMagic), kMagic);
  EXPECT_EQ(read_message(region.data()), "{}");
  const Entry e{DType::kFloat32, {2, 4}, kHeaderBytes, 32};
  write_entry(region.data(), 0, e);
  auto back = read_entry(region.data(), region.size(), 0);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->dims, (Shape{2, 4}));
  EXPECT_EQ(back->offset, kHeaderBytes);
}

TEST(WorkerProtocol, AnEntryOutsideTheArenaOrWithWrongBytesIsRefused) {
  std::vector<std::byte> region(kHeaderBytes + 4096);
  const size_t size = region.size();
  write_entry(region.data(), 1, {DType::kFloat32, {2, 4}, kHeaderBytes + 4096 - 16, 32});
  EXPECT_NE(read_entry(region.data(), size, 1).error().message.find("outside the region"),
            std::string::npos);
  write_entry(region.data(), 1, {DType::kFloat32, {2, 4}, 64, 32});  // in the header
  EXPECT_FALSE(read_entry(region.data(), size, 1).ok());
  write_entry(region.data(), 1, {DType::kFloat32, {2, 4}, kHeaderBytes, 31});
  EXPECT_NE(read_entry(region.data(), size, 1).error().message.find("which takes 32"),
            std::string::npos);
  write_entry(region.data(), 1, {DType::kFloat32, {int64_t{1} << 62, 8}, kHeaderBytes, 0});
  EXPECT_NE(read_entry(region.data(), size, 1).error().message.find("overflows"),
            std::string::npos);
  write_entry(region.data(), 1, {DType::kFloat32, {}, kHeaderBytes, 4});
  EXPECT_NE(read_entry(region.data(), size, 1).error().message.find("rank 0"), std::string::npos);
  put_u32(region.data(), kTableOffset + kEntryBytes, 99);  // slot 1's datatype
  EXPECT_NE(read_entry(region.data(), size, 1).error().message.find("unknown datatype code 99"),
            std::string::npos);
}

TEST(WorkerProtocol, OutputsAreCheckedAgainstTheModel) {
  std::vector<std::byte> region(kHeaderBytes + 4096);
  const size_t size = region.size();
  put_u32(region.data(), kFieldOutputs, 1);
  write_entry(region.data(), kMaxTensors, {DType::kInt64, {3, 5}, kHeaderBytes, 120});
  auto ok = read_outputs(region.data(), size, model(), 3);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  auto wrong_batch = read_outputs(region.data(), size, model(), 2);
  ASSERT_FALSE(wrong_batch.ok());
  EXPECT_NE(wrong_batch.error().message.find("output 'y' has shape [3, 5] for a batch of 2"),
            std::string::npos);
  write_entry(region.data(), kMaxTensors, {DType::kFloat32, {3, 5}, kHeaderBytes, 60});
  EXPECT_NE(read_outputs(region.data(), size, model(), 3).error().message.find("datatype FP32"),
            std::string::npos);
  put_u32(region.data(), kFieldOutputs, 2);
  EXPECT_NE(read_outputs(region.data(), size, model(), 3).error().message.find("answered 2"),
            std::string::npos);
}

TEST(WorkerProtocol, MetadataTooLargeForTheMessageIsRefused) {
  std::vector<std::byte> region(kHeaderBytes);
  EXPECT_FALSE(init_header(region.data(), region.size(), std::string(kMessageBytes + 1, 'x')).ok());
}

}  // namespace
}  // namespace batchscope::worker
