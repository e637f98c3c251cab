// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What else the machine was doing while something was measured: the CPU time
// every other process used over a window, read from /proc/PID/stat (user and
// system ticks), with the busiest named. A measurement on a busy machine
// says so and names the load (profile, the kept cost's calibration), where a
// bare "did not settle" would leave the user guessing.
//
// A process that started inside the window counts all its ticks; one that
// ended inside it is missed. The measuring process itself (`self`) is left
// out, threads and all, and so may be its children, where they do the
// measured work (a Python model's worker processes).
// Thread-safety: free functions; they read the file system.

#include <map>
#include <string>
#include <vector>

namespace batchscope {

// CPU ticks (utime + stime), name and start time of every process, by pid.
struct LoadSnapshot {
  struct Process {
    std::string name;
    unsigned long long ticks = 0;
    unsigned long long started = 0;  // ticks after boot: tells a reused pid
    int parent = 0;                  // the parent's pid
  };
  std::map<int, Process> processes;
};

// Reads `proc`/PID/stat for every PID; unreadable entries are skipped.
LoadSnapshot read_load(const std::string& proc = "/proc");

// Other processes' CPU time over a window, in cores (1.0: one core kept busy
// throughout).
struct CompetingLoad {
  double cores = 0;
  struct Process {
    int pid = 0;
    std::string name;
    double cores = 0;
  };
  std::vector<Process> busiest;  // at most three, the busiest first, each above 0.05 cores
  // "2 processes used 1.02 cores: pid 4242 (spin) 0.98, pid 17 (make) 0.04".
  std::string describe() const;
  // True when others used at least `threshold` cores (default: a quarter).
  bool busy(double threshold = 0.25) const { return cores >= threshold; }
};

// What every process but `self` (and, unless `count_children`, its
// children) used between `before` and `after`, over
// `wall_s` seconds of wall time; `ticks_per_s` is the kernel's clock tick
// (sysconf(_SC_CLK_TCK), 100 on Linux).
CompetingLoad competing_load(const LoadSnapshot& before, const LoadSnapshot& after, double wall_s,
                             int self, double ticks_per_s, bool count_children = true);

// Watches the machine from construction: load() is what every other process
// used since then (or since the last restart()).
class LoadWatch {
 public:
  explicit LoadWatch(std::string proc = "/proc", bool count_children = true);
  void restart();
  CompetingLoad load() const;

 private:
  std::string proc_;
  bool count_children_ = true;
  LoadSnapshot start_;
  double started_s_ = 0;
};

}  // namespace batchscope
