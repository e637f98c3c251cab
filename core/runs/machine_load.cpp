// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/machine_load.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace batchscope {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "1234 (name with (parens)) S 1 ... utime stime ... starttime ...": the name
// is between the first '(' and the last ')'; the parent's pid, utime, stime
// and starttime are the 2nd, 12th, 13th and 20th fields after it.
bool parse_stat(const std::string& line, LoadSnapshot::Process& out) {
  const size_t open = line.find('(');
  const size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  out.name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 0; i < 20 && rest >> field; ++i) {
    if (i != 1 && i != 11 && i != 12 && i != 19) continue;
    unsigned long long v = 0;
    try {
      v = std::stoull(field);
    } catch (...) {
      return false;
    }
    if (i == 1) out.parent = static_cast<int>(v);
    if (i == 11) utime = v;
    if (i == 12) stime = v;
    if (i == 19) {
      out.ticks = utime + stime;
      out.started = v;
      return true;
    }
  }
  return false;
}

}  // namespace

LoadSnapshot read_load(const std::string& proc) {
  LoadSnapshot s;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    std::ifstream in(it->path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    LoadSnapshot::Process p;
    if (parse_stat(line, p)) s.processes.emplace(std::stoi(name), std::move(p));
  }
  return s;
}

CompetingLoad competing_load(const LoadSnapshot& before, const LoadSnapshot& after, double wall_s,
                             int self, double ticks_per_s, bool count_children) {
  CompetingLoad load;
  if (!(wall_s > 0) || !(ticks_per_s > 0)) return load;
  std::vector<CompetingLoad::Process> all;
  for (const auto& [pid, p] : after.processes) {
    if (pid == self || (!count_children && p.parent == self)) continue;
    const auto was = before.processes.find(pid);
    // A pid reused by another process (another start time) counts from
    // nothing, as a new one does; a name may change (kernel workers do).
    const bool same = was != before.processes.end() && was->second.started == p.started &&
                      was->second.ticks <= p.ticks;
    const unsigned long long used = same ? p.ticks - was->second.ticks : p.ticks;
    if (used == 0) continue;
    const double cores = static_cast<double>(used) / ticks_per_s / wall_s;
    load.cores += cores;
    all.push_back({pid, p.name, cores});
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.cores > b.cores; });
  for (const auto& p : all) {
    if (load.busiest.size() == 3 || p.cores < 0.05) break;
    load.busiest.push_back(p);
  }
  return load;
}

std::string CompetingLoad::describe() const {
  char head[96];
  std::snprintf(head, sizeof head, "other processes used %.2f cores", cores);
  std::string s = head;
  for (size_t i = 0; i < busiest.size(); ++i) {
    char one[160];
    std::snprintf(one, sizeof one, "%spid %d (%s) %.2f", i ? ", " : ": ", busiest[i].pid,
                  busiest[i].name.substr(0, 64).c_str(), busiest[i].cores);
    s += one;
  }
  return s;
}

LoadWatch::LoadWatch(std::string proc, bool count_children)
    : proc_(std::move(proc)), count_children_(count_children) {
  restart();
}

void LoadWatch::restart() {
  start_ = read_load(proc_);
  started_s_ = now_s();
}

CompetingLoad LoadWatch::load() const {
  const LoadSnapshot now = read_load(proc_);
  return competing_load(start_, now, now_s() - started_s_, static_cast<int>(::getpid()),
                        static_cast<double>(::sysconf(_SC_CLK_TCK)), count_children_);
}

}  // namespace batchscope
