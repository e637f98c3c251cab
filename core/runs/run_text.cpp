// SPDX-License-Identifier: GPL-3.0-or-later
// A recorded run's summary as text, as bench prints it.

#include <cstdio>
#include <string>

#include "runs/run_record.h"

namespace batchscope {

std::string run_summary_text(const RunData& run, const RunSummary& s) {
  std::string out;
  auto line = [&out](const char* format, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, format, args...);
    out += buf;
  };
  line("\n%s -> %s, model %s\n", run.config.pattern.c_str(), run.config.target.c_str(),
       run.config.model.c_str());
  if (run.config.target == "predict") {
    line("  predicted: %s\n", describe(run.config.options).c_str());
  } else if (run.config.target != "inproc" && run.config.target != "self-http") {
    out += "  (serving options are the remote server's own)\n";
  } else {
    line("  %s\n", describe(run.config.options).c_str());
  }
  line("  sent %llu   ok %llu   rejected %llu   timed out %llu   errors %llu\n",
       static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.ok),
       static_cast<unsigned long long>(s.rejected), static_cast<unsigned long long>(s.timed_out),
       static_cast<unsigned long long>(s.errors));
  line("  throughput   %.1f req/s over %.2f s\n", s.throughput_rps, s.duration_s);
  const RunLatency& l = s.latency;
  line("  latency ms   p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
       l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.p999_ms, l.max_ms, l.mean_ms);
  line("  send lag ms  p50 %.3f  p99 %.3f  max %.3f\n", s.lag_p50_ms, s.lag_p99_ms, s.lag_max_ms);
  if (!s.batch_histogram.empty()) {
    line("  batch size   mean %.2f  (", s.batch_mean);
    int shown = 0;
    for (auto it = s.batch_histogram.rbegin(); it != s.batch_histogram.rend() && shown < 6;
         ++it, ++shown) {
      line("%s%u: %llu", shown ? ", " : "", it->first, static_cast<unsigned long long>(it->second));
    }
    line("%s)\n", s.batch_histogram.size() > 6 ? ", ..." : "");
    line("  queue depth  mean %.2f  max %u\n", s.depth_mean, s.depth_max);
  }
  if (s.padded_length > 0) {
    line("  padding      waste %.1f%%  (%llu real of %llu padded positions)\n",
         100.0 * s.padding_waste, static_cast<unsigned long long>(s.real_length),
         static_cast<unsigned long long>(s.padded_length));
  }
  return out;
}

}  // namespace batchscope
