// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/stop_signal.h"

#include <cstdio>

namespace batchscope {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
}

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop = false;
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second signal acts as it always does
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

const std::atomic<bool>* StopOnSignal::flag() const { return &g_stop; }
bool StopOnSignal::stopped() const { return g_stop.load(); }

std::string StopOnSignal::signal_name() const {
  switch (g_signal.load()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return {};
  }
}

std::string StopOnSignal::ended(TimePoint start, TimePoint last, double& duration_s) const {
  if (!stopped()) return {};
  const double asked_s = duration_s;
  duration_s = std::chrono::duration<double>(last - start).count();
  char text[96];
  std::snprintf(text, sizeof text, ") after %.1f s of %g", duration_s, asked_s);
  const std::string note = "by the user (" + signal_name() + text;
  std::printf("  stopped %s\n", note.c_str());
  return note;
}

}  // namespace batchscope
