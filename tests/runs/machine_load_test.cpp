// SPDX-License-Identifier: GPL-3.0-or-later
// What other processes used, from a /proc laid out by the test: the
// arithmetic, names with spaces and parentheses, the measuring process left
// out, a reused pid, and the message. The real /proc under a real spinner
// is tests/torch/busy_machine_test.cpp (run alone).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runs/machine_load.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;

class MachineLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("batchscope_proc_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "self");  // not a pid: skipped
    std::ofstream(dir_ / "stat") << "cpu 1 2 3\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A process with utime + stime ticks, the rest of its stat as the kernel writes it.
  void process(int pid, const std::string& name, unsigned long long utime, unsigned long long stime,
               unsigned long long started = 100) {
    fs::create_directories(dir_ / std::to_string(pid));
    std::ofstream(dir_ / std::to_string(pid) / "stat")
        << pid << " (" << name << ") R 1 1 1 0 -1 4194304 100 0 0 0 " << utime << " " << stime
        << " 0 0 20 0 1 0 " << started << " 1000 10 18446744073709551615\n";
  }
  fs::path dir_;
};

TEST_F(MachineLoadTest, OthersTicksOverTheWindowInCoresTheBusiestNamed) {
  process(10, "spin", 100, 0);
  process(11, "my (odd) name", 5, 5);
  process(12, "idle", 7, 0);
  process(99, "self", 0, 0);
  const LoadSnapshot before = read_load(dir_.string());
  ASSERT_EQ(before.processes.size(), 4u);
  EXPECT_EQ(before.processes.at(11).name, "my (odd) name");
  EXPECT_EQ(before.processes.at(11).ticks, 10u);
  process(10, "spin", 290, 10);          // 200 ticks: 1 core over 2 s at 100 ticks/s
  process(11, "my (odd) name", 15, 15);  // 20 ticks: 0.1
  process(99, "self", 500, 0);           // the measuring process: left out
  process(13, "new", 4, 0);              // started inside: 0.02, counted, not named
  const LoadSnapshot after = read_load(dir_.string());
  const CompetingLoad load = competing_load(before, after, 2.0, 99, 100);
  EXPECT_DOUBLE_EQ(load.cores, 1.0 + 0.1 + 0.02);
  ASSERT_EQ(load.busiest.size(), 2u);
  EXPECT_EQ(load.busiest[0].pid, 10);
  EXPECT_DOUBLE_EQ(load.busiest[0].cores, 1.0);
  EXPECT_EQ(load.busiest[1].name, "my (odd) name");
  EXPECT_TRUE(load.busy());
  EXPECT_EQ(load.describe(),
            "other processes used 1.12 cores: pid 10 (spin) 1.00, pid 11 (my (odd) name) 0.10");
}

TEST_F(MachineLoadTest, AReusedPidCountsFromNothingAndAQuietMachineIsNotBusy) {
  process(20, "old", 1000, 0);
  process(21, "kworker/0:1-events", 50, 0);
  const LoadSnapshot before = read_load(dir_.string());
  EXPECT_EQ(before.processes.at(20).started, 100u);
  process(20, "new", 10, 0, 5000);  // another process with the same pid: started later
  process(21, "kworker/0:1-mm_percpu_wq", 50, 0);  // renamed, the same process: nothing used
  const CompetingLoad load = competing_load(before, read_load(dir_.string()), 1.0, 1, 100);
  EXPECT_DOUBLE_EQ(load.cores, 0.1);
  EXPECT_FALSE(load.busy());
  EXPECT_EQ(load.describe(), "other processes used 0.10 cores: pid 20 (new) 0.10");
  // No time, or a proc that is not there: nothing.
  EXPECT_DOUBLE_EQ(competing_load(before, before, 0, 1, 100).cores, 0);
  EXPECT_TRUE(read_load((dir_ / "missing").string()).processes.empty());
}

}  // namespace
}  // namespace batchscope
