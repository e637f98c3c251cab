// SPDX-License-Identifier: GPL-3.0-or-later
// The operating-system parts of a worker: a shared-memory region (a memfd
// that Batchscope makes, grows and closes; the worker maps the descriptor it
// is handed, so nothing is left in /dev/shm when either side dies), an
// eventfd pair, and a child process started with posix_spawn whose standard
// output and error come back through one pipe. The pipe is read while
// Batchscope waits on the child, so its last lines are at hand when it
// dies; each line may also be echoed to Batchscope's standard error.
// Thread-safety: one thread uses an object at a time (a lane, its runner).

#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace batchscope {

// The steady clock in milliseconds: the deadlines a worker is waited on with.
int64_t steady_now_ms();

class SharedRegion {
 public:
  // A region of `bytes` (rounded up to a page), zero-filled; `name` labels
  // the memfd (/proc/PID/fd shows it).
  static Expected<SharedRegion> create(size_t bytes, const std::string& name);
  SharedRegion() = default;
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  // Grows the region to at least `bytes`; the mapping may move.
  Status grow(size_t bytes);

 private:
  int fd_ = -1;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// A one-way doorbell between processes (an eventfd, close-on-exec).
class EventFd {
 public:
  // `nonblocking`: a read that finds nothing rung returns at once.
  static Expected<EventFd> create(bool nonblocking);
  EventFd() = default;
  EventFd(EventFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  EventFd& operator=(EventFd&& other) noexcept;
  ~EventFd();
  int fd() const { return fd_; }
  void ring() const;
  // Takes what has been rung, without waiting; false when nothing was.
  bool take() const;

 private:
  int fd_ = -1;
};

// How a child process ended, in words: "exited with status 3", "was killed
// by signal 11 (SIGSEGV)".
struct ProcessEnd {
  int status = 0;  // waitpid's; -1: it was reaped elsewhere, how it ended is unknown
  std::string text() const;
};

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is the program's path
  // Set in the child's environment where not already set.
  std::vector<std::pair<std::string, std::string>> env_defaults;
  // Handed to the child as descriptors 3, 4, 5, ... in this order.
  std::vector<int> pass_fds;
  // Standard output goes to a pipe of its own (read_all()), not with standard error.
  bool separate_stdout = false;
  // Each line the child writes is also written to this process's standard
  // error after this prefix; empty: none are.
  std::string echo_prefix;
};

class ChildProcess {
 public:
  // Starts the child. An error names the program and why it could not start.
  static Expected<std::unique_ptr<ChildProcess>> spawn(const SpawnRequest& request);
  ~ChildProcess();  // a child still running is killed and reaped

  pid_t pid() const { return pid_; }

  enum class Wake { kRung, kEnded, kTimedOut };
  // Waits until `bell` rings (taking the ring), the child ends, or
  // `timeout_ms` passes (-1: no limit), reading its output meanwhile.
  Wake wait(const EventFd& bell, int timeout_ms);
  // Runs until the child ends (or `timeout_ms` passes: then it is killed),
  // reading both pipes; returns what it wrote to standard output.
  std::string read_all(int timeout_ms);
  // SIGKILL and reap.
  void kill();
  // Whether it has ended, reaping it if so; does not wait.
  bool ended();
  // How it ended; empty while it runs.
  const std::optional<ProcessEnd>& end() const { return end_; }
  // The last `lines` lines it wrote (standard error, and standard output
  // unless separate) since it started or since forget_tail(), at most 4 KiB.
  std::string tail(size_t lines) const;
  void forget_tail() { tail_.clear(); }

 private:
  ChildProcess() = default;
  void read_output(int& fd);  // closes it at its end
  void reap(bool block);
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int err_fd_ = -1;
  int out_fd_ = -1;
  std::string tail_;     // the last bytes of its output
  std::string partial_;  // an echoed line not yet ended
  std::string stdout_;
  std::string echo_prefix_;
  std::optional<ProcessEnd> end_;
};

}  // namespace batchscope
