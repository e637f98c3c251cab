// Tests for what a run keeps about its machine and model file: the SHA-256
// against FIPS 180-2's examples and against a file hashed in pieces.

#include "runs/run_context.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace batchscope {
namespace {

TEST(RunContext, Sha256MatchesTheStandardsExamples) {
  EXPECT_EQ(sha256_hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(RunContext, FingerprintsAFileLargerThanOneRead) {
  const std::string path = ::testing::TempDir() + "run_context_model.bin";
  std::string bytes(3 * (1 << 20) + 17, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 + 7);
  std::ofstream(path, std::ios::binary) << bytes;
  auto f = file_facts(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->size, bytes.size());
  EXPECT_EQ(f->sha256, sha256_hex(bytes.data(), bytes.size()));
  EXPECT_EQ(f->path.front(), '/');
  EXPECT_EQ(f->modified.size(), 20u) << f->modified;
  const auto j = nlohmann::json::parse(file_facts_json(*f));
  EXPECT_EQ(j["sha256"], f->sha256);
  EXPECT_EQ(j["size"], bytes.size());
  EXPECT_FALSE(file_facts("/nonexistent/model.pt").ok());
}

TEST(RunContext, NamesTheMachine) {
  const auto j = nlohmann::json::parse(machine_json());
  EXPECT_GT(j["cores"].get<int>(), 0);
  EXPECT_FALSE(j["cpu"].get<std::string>().empty());
  EXPECT_FALSE(j["allocator"].get<std::string>().empty());
  EXPECT_NE(j["kernel"].get<std::string>().find("Linux"), std::string::npos);
}

}  // namespace
}  // namespace batchscope
