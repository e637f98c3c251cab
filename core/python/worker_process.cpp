// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace batchscope {
namespace {

constexpr size_t kTailBytes = 4096;
constexpr size_t kPage = 4096;

std::string errno_text(int e) { return std::strerror(e); }

size_t page_up(size_t n) { return (n + kPage - 1) / kPage * kPage; }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The environment with each default set where the name is not.
std::vector<std::string> child_env(const SpawnRequest& r) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& [name, value] : r.env_defaults) {
    if (std::getenv(name.c_str()) == nullptr) env.push_back(name + "=" + value);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --- SharedRegion -------------------------------------------------------------

Expected<SharedRegion> SharedRegion::create(size_t bytes, const std::string& name) {
  SharedRegion r;
  r.fd_ = static_cast<int>(::syscall(SYS_memfd_create, name.c_str(), MFD_CLOEXEC));
  if (r.fd_ < 0) return Error{ErrorCode::kInternal, "memfd_create: " + errno_text(errno)};
  if (Status s = r.grow(bytes); !s) return s.error();
  return r;
}

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    this->~SharedRegion();
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedRegion::~SharedRegion() {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  close_fd(fd_);
}

Status SharedRegion::grow(size_t bytes) {
  const size_t want = page_up(bytes);
  if (want <= size_) return {};
  if (::ftruncate(fd_, static_cast<off_t>(want)) != 0) {
    return Error{ErrorCode::kInternal, "cannot grow the worker's shared memory to " +
                                           std::to_string(want) + " bytes: " + errno_text(errno)};
  }
  void* p = data_ ? ::mremap(data_, size_, want, MREMAP_MAYMOVE)
                  : ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    return Error{ErrorCode::kInternal, "cannot map " + std::to_string(want) +
                                           " bytes of shared memory: " + errno_text(errno)};
  }
  data_ = static_cast<std::byte*>(p);
  size_ = want;
  return {};
}

// --- EventFd ------------------------------------------------------------------

Expected<EventFd> EventFd::create(bool nonblocking) {
  EventFd e;
  e.fd_ = ::eventfd(0, EFD_CLOEXEC | (nonblocking ? EFD_NONBLOCK : 0));
  if (e.fd_ < 0) return Error{ErrorCode::kInternal, "eventfd: " + errno_text(errno)};
  return e;
}

EventFd& EventFd::operator=(EventFd&& other) noexcept {
  if (this != &other) {
    close_fd(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

EventFd::~EventFd() { close_fd(fd_); }

void EventFd::ring() const {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
}

bool EventFd::take() const {
  uint64_t v = 0;
  return ::read(fd_, &v, sizeof v) == static_cast<ssize_t>(sizeof v);
}

// --- ProcessEnd ---------------------------------------------------------------

std::string ProcessEnd::text() const {
  if (status == -1) return "ended (its status was collected elsewhere)";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = ::sigabbrev_np(sig);
    std::string s = "was killed by signal " + std::to_string(sig);
    if (abbrev) s += std::string(" (SIG") + abbrev + ")";
    if (sig == SIGKILL) s += " (the out-of-memory killer sends it, as does kill -9)";
    return s;
  }
  return "ended with wait status " + std::to_string(status);
}

// --- ChildProcess -------------------------------------------------------------

Expected<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const SpawnRequest& request) {
  if (request.argv.empty()) return invalid_argument("no program to start");
  const std::string& program = request.argv[0];
  int err_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      (request.separate_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0)) {
    const int e = errno;
    for (int fd : {err_pipe[0], err_pipe[1]}) close_fd(fd);
    return Error{ErrorCode::kInternal, "pipe: " + errno_text(e)};
  }
  // The descriptors handed on are first copied above any number they go to,
  // so that no dup2 below overwrites another one's source.
  std::vector<int> high;
  for (int fd : request.pass_fds) {
    high.push_back(::fcntl(fd, F_DUPFD_CLOEXEC, 64));
    if (high.back() < 0) {
      const int e = errno;
      for (int h : high) ::close(h);
      for (int p : {err_pipe[0], err_pipe[1], out_pipe[0], out_pipe[1]}) close_fd(p);
      return Error{ErrorCode::kInternal,
                   "cannot hand the worker its descriptors: " + errno_text(e)};
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, request.separate_stdout ? out_pipe[1] : err_pipe[1],
                                   1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (size_t i = 0; i < high.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, high[i], 3 + static_cast<int>(i));
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, 3 + static_cast<int>(high.size()));
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = request.argv;
  std::vector<std::string> env = child_env(request);
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(env);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  for (int fd : high) ::close(fd);
  ::close(err_pipe[1]);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(err_pipe[0]);
    if (out_pipe[0] >= 0) ::close(out_pipe[0]);
    return invalid_argument("cannot start " + program + ": " + errno_text(rc));
  }
  std::unique_ptr<ChildProcess> c(new ChildProcess);
  c->pid_ = pid;
  c->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  c->err_fd_ = err_pipe[0];
  c->out_fd_ = out_pipe[0];
  c->echo_prefix_ = request.echo_prefix;
  for (int fd : {c->err_fd_, c->out_fd_}) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return c;
}

ChildProcess::~ChildProcess() {
  if (!end_) kill();
  close_fd(pidfd_);
  close_fd(err_fd_);
  close_fd(out_fd_);
}

void ChildProcess::read_output(int& fd) {
  char buf[16384];
  // A few reads a call, so that a worker that never stops writing cannot
  // keep its lane here past the batch's deadline.
  for (int reads = 0; reads < 8; ++reads) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) close_fd(fd);  // its end closed: nothing more to poll for
    if (n <= 0) return;
    const std::string_view got(buf, static_cast<size_t>(n));
    if (&fd == &out_fd_) {
      if (stdout_.size() < (64u << 20)) stdout_.append(got);
      continue;
    }
    tail_.append(got);
    if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
    if (echo_prefix_.empty()) continue;
    partial_.append(got);
    std::string lines;  // the whole lines read, each after the prefix, written at once
    size_t from = 0;
    for (size_t nl; (nl = partial_.find('\n', from)) != std::string::npos; from = nl + 1) {
      lines += echo_prefix_;
      lines.append(partial_, from, nl + 1 - from);
    }
    if (!lines.empty()) std::fwrite(lines.data(), 1, lines.size(), stderr);
    partial_.erase(0, from);
    if (partial_.size() > kTailBytes) partial_.clear();
  }
}

void ChildProcess::reap(bool block) {
  if (end_ || pid_ <= 0) return;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) end_ = ProcessEnd{status};
  if (r < 0 && errno == ECHILD) end_ = ProcessEnd{-1};  // reaped elsewhere: it has ended
}

bool ChildProcess::ended() {
  reap(false);
  return end_.has_value();
}

ChildProcess::Wake ChildProcess::wait(const EventFd& bell, int timeout_ms) {
  const int64_t until = timeout_ms < 0 ? -1 : steady_now_ms() + timeout_ms;
  for (;;) {
    if (end_) return bell.take() ? Wake::kRung : Wake::kEnded;
    pollfd fds[3] = {{bell.fd(), POLLIN, 0}, {pidfd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int left = -1;
    if (until >= 0) {
      left = static_cast<int>(std::max<int64_t>(0, until - steady_now_ms()));
    }
    // Without a pidfd the child's end is looked for every 100 ms.
    const int n = ::poll(fds, 3, pidfd_ >= 0 ? left : left < 0 ? 100 : std::min(left, 100));
    if (n < 0 && errno != EINTR) {
      kill();  // a child this side can no longer watch is ended, so that it has an end
      return Wake::kEnded;
    }
    if (fds[2].revents) read_output(err_fd_);
    if ((fds[0].revents & POLLIN) && bell.take()) return Wake::kRung;
    if (fds[1].revents || pidfd_ < 0) {
      reap(pidfd_ >= 0);
      if (end_) {
        if (err_fd_ >= 0) read_output(err_fd_);
        if (bell.take()) return Wake::kRung;  // it answered, then ended
        return Wake::kEnded;
      }
    }
    if (until >= 0 && steady_now_ms() >= until) return Wake::kTimedOut;
  }
}

std::string ChildProcess::read_all(int timeout_ms) {
  const int64_t until = steady_now_ms() + timeout_ms;
  for (;;) {
    pollfd fds[3] = {{pidfd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {out_fd_, POLLIN, 0}};
    const int left = static_cast<int>(std::max<int64_t>(0, until - steady_now_ms()));
    const int n = ::poll(fds, 3, pidfd_ < 0 ? std::min(left, 100) : left);
    if (fds[1].revents) read_output(err_fd_);
    if (fds[2].revents) read_output(out_fd_);
    reap(false);
    if (end_) {
      if (err_fd_ >= 0) read_output(err_fd_);
      if (out_fd_ >= 0) read_output(out_fd_);
      return stdout_;
    }
    if (n == 0 && steady_now_ms() >= until) {
      kill();
      return stdout_;
    }
    if (n < 0 && errno != EINTR) {
      kill();
      return stdout_;
    }
  }
}

void ChildProcess::kill() {
  if (end_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(true);
  if (err_fd_ >= 0) read_output(err_fd_);
}

std::string ChildProcess::tail(size_t lines) const {
  std::string t = tail_.size() > kTailBytes ? tail_.substr(tail_.size() - kTailBytes) : tail_;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  size_t at = t.size();
  for (size_t i = 0; i < lines && at != std::string::npos && at > 0; ++i) {
    at = t.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? t : t.substr(at + 1);
}

}  // namespace batchscope
