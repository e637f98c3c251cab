// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for what a run keeps about its machine and model file: the SHA-256
// against FIPS 180-2's examples and against a file hashed in pieces.

#include "runs/run_context.h"

#include <gtest/gtest.h>

#include <filesystem>
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

// A /proc as an NVIDIA machine has it (the driver's version file and a GPU's
// information file), in a folder of the test's.
TEST(RunContext, NamesTheNvidiaDriverAndGpusWhereLoaded) {
  const std::string proc = ::testing::TempDir() + "run_context_proc";
  std::filesystem::remove_all(proc);
  std::filesystem::create_directories(proc + "/driver/nvidia/gpus/0000:3b:00.0");
  std::ofstream(proc + "/cpuinfo") << "processor\t: 0\nmodel name\t: Test CPU 9000\n";
  std::ofstream(proc + "/driver/nvidia/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC "
         "2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  std::ofstream(proc + "/driver/nvidia/gpus/0000:3b:00.0/information")
      << "Model: \t\t NVIDIA H200\nIRQ:   \t\t 123\nBus Location: \t 0000:3b:00.0\n";
  const auto j = nlohmann::json::parse(machine_json(proc));
  EXPECT_EQ(j["cpu"], "Test CPU 9000");
  EXPECT_EQ(j["nvidia_driver"], "550.54.15");
  ASSERT_TRUE(j["gpus"].is_array());
  EXPECT_EQ(j["gpus"][0], "NVIDIA H200 (0000:3b:00.0)");
  // A tune's result says what it was measured on, as its last member.
  const auto tuned =
      nlohmann::json::parse(with_measured_on(R"({"best": {"options": {}}} )", "cuda:0", proc));
  EXPECT_TRUE(tuned["best"].is_object());
  EXPECT_EQ(tuned["measured_on"]["device"], "cuda:0");
  EXPECT_EQ(tuned["measured_on"]["machine"]["gpus"][0], "NVIDIA H200 (0000:3b:00.0)");
  EXPECT_EQ(nlohmann::json::parse(with_measured_on("{ }", "cpu", proc))["measured_on"]["device"],
            "cpu");
  EXPECT_EQ(with_measured_on("[1]", "cpu", proc), "[1]") << "not an object: left as it is";
  // Without the driver, no GPU keys at all.
  std::filesystem::remove_all(proc + "/driver");
  EXPECT_FALSE(nlohmann::json::parse(machine_json(proc)).contains("gpus"));
}

TEST(RunContext, AModelFileKeepsItsSidecarAsMetadata) {
  const std::string dir = ::testing::TempDir() + "run_context_model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/toy.pt") << "not really torchscript";
  std::ofstream(dir + "/toy.json") << R"({"name": "toy", "max_batch_size": 64})";
  const auto j = nlohmann::json::parse(model_file_json(dir + "/toy.pt"));
  EXPECT_EQ(j["metadata"]["max_batch_size"], 64);
  EXPECT_EQ(j["sha256"], sha256_hex("not really torchscript", 22));
  EXPECT_EQ(nlohmann::json::parse(model_file_json(dir + "/gone.pt"))["path"], dir + "/gone.pt");
}

}  // namespace
}  // namespace batchscope
