// SPDX-License-Identifier: GPL-3.0-or-later
// The busy-machine detector on the real /proc: a child process that burns a
// core is seen and named, and neither this process nor a spinner that has
// gone is ever named; a profile measured beside the spinner names it. Run
// alone (RUN_SERIAL): another test beside it is a competing load too. The
// machine's own work (a kernel worker, another job on a CI host) may still
// show, so a quiet watch is judged by what it names, not by its total, and
// the spinner's own share by its name.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "runs/machine_load.h"
#include "torch/profile.h"

namespace batchscope {
namespace {

// A child that spins until killed; its name is the test binary's.
class Spinner {
 public:
  Spinner() {
    pid_ = ::fork();
    if (pid_ == 0) {
      volatile unsigned long x = 0;
      for (;;) x = x + 1;
    }
  }
  ~Spinner() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// What the others used over `seconds` of real time (the thing measured is
// the machine's CPU time, so real time must pass).
CompetingLoad watch(double seconds) {
  LoadWatch w;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return w.load();
}

// The processes a load names.
std::vector<int> named(const CompetingLoad& load) {
  std::vector<int> pids;
  for (const auto& p : load.busiest) pids.push_back(p.pid);
  return pids;
}

TEST(BusyMachine, ASpinnerIsSeenAndNamedAndAQuietMachineIsNot) {
  const CompetingLoad quiet = watch(0.5);
  EXPECT_THAT(named(quiet), ::testing::Not(::testing::Contains(::getpid()))) << quiet.describe();
  CompetingLoad busy;
  int pid = 0;
  {
    Spinner spin;
    pid = spin.pid();
    busy = watch(0.5);
  }
  EXPECT_TRUE(busy.busy()) << busy.describe();
  EXPECT_GT(busy.cores, 0.6) << busy.describe();
  ASSERT_FALSE(busy.busiest.empty());
  EXPECT_EQ(busy.busiest[0].pid, pid) << busy.describe();
  EXPECT_NE(busy.describe().find("pid " + std::to_string(pid) + " ("), std::string::npos);
  const CompetingLoad after = watch(0.5);
  EXPECT_THAT(named(after), ::testing::Not(::testing::Contains(pid))) << after.describe();
}

TEST(BusyMachine, AProfileBesideASpinnerNamesItAndOneWithoutDoesNot) {
  ProfileOptions o;
  o.max_batch = 4;
  o.seconds_per_point = 0.15;
  auto quiet = profile_model(BATCHSCOPE_SOURCE_DIR "/models/linear_128x64.pt", o);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  EXPECT_EQ(quiet->competing.find("pid " + std::to_string(::getpid()) + " ("), std::string::npos)
      << quiet->competing;
  Spinner spin;
  auto busy = profile_model(BATCHSCOPE_SOURCE_DIR "/models/linear_128x64.pt", o);
  ASSERT_TRUE(busy.ok()) << busy.error().message;
  EXPECT_GT(busy->competing_cores, 0.5) << busy->competing;
  EXPECT_NE(busy->competing.find("pid " + std::to_string(spin.pid()) + " ("), std::string::npos)
      << busy->competing;
}

}  // namespace
}  // namespace batchscope
