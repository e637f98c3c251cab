// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The server under test as a child process: started from a command line,
// its output read on a thread of its own (kept, and echoed to stderr with a
// prefix), its address taken from the "listening on http://HOST:PORT" line,
// its RSS read from /proc, stopped by a signal and waited for.
// Thread-safety: one owner thread; lines() may be called from any thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace batchscope::soak {

class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> argv);
  ~ServerProcess();  // kills the child if it still runs

  // Starts it and waits up to `timeout` for its address; false (with the
  // output so far on stderr) if it never says where it listens.
  bool start(std::chrono::seconds timeout);
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  bool alive() const;
  // Resident set size in KiB, from /proc/PID/status; 0 once it has gone.
  uint64_t rss_kib() const;
  void signal(int sig) const;
  // Waits up to `timeout` for it to exit: its exit status, or nullopt on
  // timeout or death by a signal (the signal is then reported on stderr).
  std::optional<int> wait(std::chrono::seconds timeout);
  // Every line it has printed so far.
  std::vector<std::string> lines() const;

 private:
  void read_output(int fd);

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string host_;
  uint16_t port_ = 0;
  std::thread reader_;
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace batchscope::soak
