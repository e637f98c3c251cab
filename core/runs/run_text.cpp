// SPDX-License-Identifier: GPL-3.0-or-later
// A recorded run's summary as text, as bench prints it.

#include <cstdio>
#include <string>

#include <algorithm>
#include "common/text_out.h"

#include "runs/run_record.h"

namespace batchscope {

std::string run_summary_text(const RunData& run, const RunSummary& s) {
  std::string out;
  append_format(out, "\n%s -> %s, model %s\n", run.config.pattern.c_str(),
                run.config.target.c_str(), run.config.model.c_str());
  if (run.config.target == "predict") {
    append_format(out, "  predicted: %s\n", describe(run.config.options).c_str());
  } else if (run.config.target != "inproc" && run.config.target != "self-http") {
    out += "  (serving options are the remote server's own)\n";
  } else {
    append_format(out, "  %s\n", describe(run.config.options).c_str());
  }
  append_format(out, "  sent %llu   ok %llu   rejected %llu   timed out %llu   errors %llu\n",
                static_cast<unsigned long long>(s.sent), static_cast<unsigned long long>(s.ok),
                static_cast<unsigned long long>(s.rejected),
                static_cast<unsigned long long>(s.timed_out),
                static_cast<unsigned long long>(s.errors));
  append_format(out, "  throughput   %.1f req/s over %.2f s\n", s.throughput_rps, s.duration_s);
  const RunLatency& l = s.latency;
  append_format(
      out,
      "  latency ms   p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
      l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.p999_ms, l.max_ms, l.mean_ms);
  if (const auto& b = run.band) {
    auto lo = [](double a, double b2, double c) { return std::min({a, b2, c}); };
    auto hi = [](double a, double b2, double c) { return std::max({a, b2, c}); };
    append_format(out,
                  "  band         p50 %.3f..%.3f  p99 %.3f..%.3f  req/s %.1f..%.1f  (t(b) "
                  "x%.2f..x%.2f: %s)\n",
                  lo(l.p50_ms, b->at_fast.p50_ms, b->at_slow.p50_ms),
                  hi(l.p50_ms, b->at_fast.p50_ms, b->at_slow.p50_ms),
                  lo(l.p99_ms, b->at_fast.p99_ms, b->at_slow.p99_ms),
                  hi(l.p99_ms, b->at_fast.p99_ms, b->at_slow.p99_ms),
                  lo(s.throughput_rps, b->rps_fast, b->rps_slow),
                  hi(s.throughput_rps, b->rps_fast, b->rps_slow), b->fast, b->slow,
                  b->source.c_str());
    if (b->draws > 0) {
      append_format(out,
                    "  other draws  p50 %.3f..%.3f  p99 %.3f..%.3f  (the same traffic drawn "
                    "again with %d other seeds, t(b) as kept)\n",
                    b->draws_low.p50_ms, b->draws_high.p50_ms, b->draws_low.p99_ms,
                    b->draws_high.p99_ms, b->draws);
    }
  }
  append_format(out, "  send lag ms  p50 %.3f  p99 %.3f  max %.3f\n", s.lag_p50_ms, s.lag_p99_ms,
                s.lag_max_ms);
  if (!s.batch_histogram.empty()) {
    append_format(out, "  batch size   mean %.2f  (", s.batch_mean);
    int shown = 0;
    for (auto it = s.batch_histogram.rbegin(); it != s.batch_histogram.rend() && shown < 6;
         ++it, ++shown) {
      append_format(out, "%s%u: %llu", shown ? ", " : "", it->first,
                    static_cast<unsigned long long>(it->second));
    }
    append_format(out, "%s)\n", s.batch_histogram.size() > 6 ? ", ..." : "");
    append_format(out, "  queue depth  mean %.2f  max %u\n", s.depth_mean, s.depth_max);
  }
  if (s.padded_length > 0) {
    append_format(out, "  padding      waste %.1f%%  (%llu real of %llu padded positions)\n",
                  100.0 * s.padding_waste, static_cast<unsigned long long>(s.real_length),
                  static_cast<unsigned long long>(s.padded_length));
  }
  if (!s.stages.empty()) {
    out += "  stages ms    p50 / p99 / mean\n";
    for (const StageFigures& f : s.stages) {
      const std::string label(stage_label(f.stage));
      append_format(out, "    %-16s %.3f / %.3f / %.3f\n", label.c_str(), f.p50_ms, f.p99_ms,
                    f.mean_ms);
    }
  }
  return out;
}

}  // namespace batchscope
