// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/soak/server_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

namespace batchscope::soak {

ServerProcess::ServerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
}

bool ServerProcess::start(std::chrono::seconds timeout) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  pid_ = ::fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> args;
    for (std::string& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    ::_exit(127);
  }
  ::close(fds[1]);
  reader_ = std::thread([this, fd = fds[0]] { read_output(fd); });
  const std::regex where(R"(listening on http://([0-9.:\[\]a-f]+):([0-9]+))");
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until && alive()) {
    for (const std::string& line : lines()) {
      std::smatch m;
      if (std::regex_search(line, m, where)) {
        host_ = m[1];
        port_ = static_cast<uint16_t>(std::stoi(m[2]));
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "soak: the server never said where it listens\n");
  return false;
}

void ServerProcess::read_output(int fd) {
  std::string pending;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::fprintf(stderr, "  [server] %s\n", line.c_str());
      std::lock_guard g(mu_);
      lines_.push_back(std::move(line));
    }
  }
  if (!pending.empty()) {
    std::lock_guard g(mu_);
    lines_.push_back(pending);
  }
  ::close(fd);
}

bool ServerProcess::alive() const { return pid_ > 0 && !reaped_ && ::kill(pid_, 0) == 0; }

uint64_t ServerProcess::rss_kib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      uint64_t kib = 0;
      in >> kib;
      return kib;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

void ServerProcess::signal(int sig) const {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

std::optional<int> ServerProcess::wait(std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      if (reader_.joinable()) reader_.join();
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      std::fprintf(stderr, "soak: the server died of signal %d\n", WTERMSIG(status));
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

std::vector<std::string> ServerProcess::lines() const {
  std::lock_guard g(mu_);
  return lines_;
}

}  // namespace batchscope::soak
