// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/tune_text.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "common/text_out.h"
#include "tuning/tune_headroom.h"
#include "tuning/tune_run.h"

namespace batchscope {
namespace {

std::string wait_text(const Options& o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(o.max_wait_us) / 1000.0);
  return buf;
}

// "1.42x +38%", ">=4.00x n/a": a row's headroom in a column.
std::string headroom_cell(const Headroom& h) {
  char buf[48];
  if (h.slowdown <= 0) return "misses";
  std::snprintf(buf, sizeof buf, "%s%.2fx", h.slowdown_beyond ? ">=" : "", h.slowdown);
  std::string out = buf;
  if (!h.rate_applies) return out + " n/a";
  std::snprintf(buf, sizeof buf, " %s%+.0f%%", h.rate_beyond ? ">=" : "", 100 * (h.rate - 1));
  return out + buf;
}

// "7.123..12.400": a row's p99 over its band.
std::string band_cell(const PredictionBand& b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f..%.3f", b.p99_ms.low, b.p99_ms.high);
  return buf;
}

// `pool`: the front's preprocess_workers vary, so each row says its own.
void row(std::string& out, const char* mark, const Evaluated& e, size_t alike, bool pool) {
  const Options& o = e.options;
  append_format(out, "%2s %-9s %6u %8s %6u %11.1f %9.3f %9.3f %7.2f%%", mark,
                strategy_name(o.strategy), o.max_batch_size, wait_text(o).c_str(), o.num_lanes,
                e.throughput_rps, e.p50_ms, e.p99_ms, 100.0 * e.loss_rate());
  if (e.band) append_format(out, "  %-18s", band_cell(*e.band).c_str());
  if (e.headroom) append_format(out, " %s", headroom_cell(*e.headroom).c_str());
  if (o.padding != Padding::kLongest) {
    append_format(out, "  %s", padding_name(o.padding));
    if (o.padding == Padding::kBuckets) append_format(out, " %s", length_buckets_text(o).c_str());
  }
  if (pool) append_format(out, "  preprocess_workers=%u", o.preprocess_workers);
  if (alike > 0) append_format(out, "  (+%zu alike)", alike);
  out += '\n';
}

void row(std::string& out, const char* mark, const GenEvaluated& e, size_t alike, bool) {
  const Options& o = e.options;
  append_format(out, "%2s %-10s %5u %6u %7s %5u %10.1f %9.2f %9.2f %9.2f %9.2f %9.2f %6.2f%%", mark,
                scheduling_name(o.scheduling), o.max_num_seqs, o.max_num_batched_tokens,
                o.scheduling == Scheduling::kStatic ? wait_text(o).c_str() : "-", o.num_lanes,
                e.tokens_per_s, e.goodput_rps, e.ttft_p50_ms, e.ttft_ms, e.itl_p50_ms, e.itl_ms,
                100 * e.loss_rate());
  if (e.band) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f..%.2f", e.band->ttft_ms.low, e.band->ttft_ms.high);
    append_format(out, "  %-17s", buf);
    std::snprintf(buf, sizeof buf, "%.2f..%.2f", e.band->itl_ms.low, e.band->itl_ms.high);
    append_format(out, " %-15s", buf);
  }
  if (!o.chunked_prefill) out += "  chunked prefill off";
  if (alike > 0) append_format(out, "  (+%zu alike)", alike);
  out += '\n';
}

bool same_gen_figures(const GenEvaluated& a, const GenEvaluated& b) {
  return a.tokens_per_s == b.tokens_per_s && a.goodput_rps == b.goodput_rps &&
         a.ttft_ms == b.ttft_ms && a.itl_ms == b.itl_ms && a.ttft_p50_ms == b.ttft_p50_ms &&
         a.itl_p50_ms == b.itl_p50_ms && a.failed == b.failed;
}

// The rows of `distinct` (index into `pareto`, alike) spread evenly, and
// the best at the end where none of them was it.
template <typename E, typename IsBest>
void rows_of(std::string& out, const std::vector<E>& pareto,
             const std::vector<std::pair<size_t, size_t>>& distinct, const Expected<E>& best,
             size_t rows, IsBest is_best, bool pool = false) {
  const size_t n = distinct.size();
  const size_t step = n > rows ? (n + rows - 1) / rows : 1;
  bool best_shown = false;
  for (size_t i = 0; i < n; i += step) {
    const E& e = pareto[distinct[i].first];
    const bool marked = best && is_best(e, *best);
    best_shown |= marked;
    row(out, marked ? "*" : "", marked ? *best : e, distinct[i].second, pool);
  }
  if (best && !best_shown) row(out, "*", *best, 0, pool);
}

}  // namespace

std::string front_text(const TuneResult& r, size_t rows) {
  std::vector<std::pair<size_t, size_t>> distinct;
  for (const FrontPoint& p : distinct_front(r.pareto)) distinct.emplace_back(p.index, p.alike);
  std::string out;
  append_format(out,
                "\nPareto front (predicted; throughput against p99 and losses): %zu points, %zu "
                "distinct\n",
                r.pareto.size(), distinct.size());
  bool banded = r.best && r.best->band;
  for (const Evaluated& e : r.pareto) banded |= e.band.has_value();
  append_format(out, "%2s %-9s %6s %8s %6s %11s %9s %9s %8s%s\n", "", "strategy", "batch",
                "wait ms", "lanes", "req/s", "p50 ms", "p99 ms", "lost",
                banded ? "  p99 band (ms)" : "");
  bool pool = false;
  for (const Evaluated& e : r.pareto) {
    pool |= e.options.preprocess_workers != r.pareto.front().options.preprocess_workers;
  }
  if (r.best)
    pool |= !r.pareto.empty() &&
            r.best->options.preprocess_workers != r.pareto.front().options.preprocess_workers;
  rows_of(
      out, r.pareto, distinct, r.best, rows,
      [](const Evaluated& e, const Evaluated& b) { return e.options == b.options; }, pool);
  return out;
}

std::string headroom_table(const HeadroomResult& h, double slo_p99_ms) {
  std::string out;
  append_format(out,
                "\nHeadroom: the best that meet p99 <= %s ms, in the objective's order; each must "
                "still meet it with t(b) %.2fx as slow, and its band is t(b) x%.2f..x%.2f (%s; "
                "%llu predictions)\n",
                message_number(slo_p99_ms).c_str(), h.needed, h.band.low, h.band.high,
                h.source.c_str(), static_cast<unsigned long long>(h.predictions));
  append_format(out, "%2s %-9s %6s %8s %6s %11s %9s %9s %8s  %-18s %s\n", "", "strategy", "batch",
                "wait ms", "lanes", "req/s", "p50 ms", "p99 ms", "lost", "p99 band (ms)",
                "headroom (t(b), rate)");
  for (size_t i = 0; i < h.checked.size(); ++i) {
    const Evaluated& e = h.checked[i];
    const bool chosen = h.chosen() == &e;
    row(out, chosen ? "*" : "", e, 0, false);
    if (e.headroom && e.headroom->slowdown < h.needed) {
      out.pop_back();
      out += "  fragile\n";
    }
  }
  if (h.checked.empty()) return out + "   none meets the objective\n";
  const Evaluated* c = h.chosen();
  if (h.holds) {
    append_format(out, "chosen: %s, which %s\n", describe(c->options).c_str(),
                  headroom_text(*c->headroom).c_str());
  } else {
    append_format(out,
                  "no configuration shown meets the objective with t(b) %.2fx as slow; the "
                  "closest is %s, which %s: chosen, fragile\n",
                  h.needed, describe(c->options).c_str(), headroom_text(*c->headroom).c_str());
  }
  return out;
}

std::string front_text(const GenTuneResult& r, size_t rows) {
  std::vector<std::pair<size_t, size_t>> distinct;
  for (size_t i = 0; i < r.pareto.size(); ++i) {
    if (!distinct.empty() && same_gen_figures(r.pareto[distinct.back().first], r.pareto[i])) {
      ++distinct.back().second;
    } else {
      distinct.emplace_back(i, 0);
    }
  }
  const int q = r.slo.quantile;
  std::string out;
  append_format(
      out,
      "\nPareto front (predicted; goodput against TTFT and ITL p%d and losses): %zu points, %zu "
      "distinct\n",
      q, r.pareto.size(), distinct.size());
  const std::string ttft = "TTFT p" + std::to_string(q), itl = "ITL p" + std::to_string(q);
  bool banded = r.best && r.best->band;
  for (const GenEvaluated& e : r.pareto) banded |= e.band.has_value();
  append_format(out, "%2s %-10s %5s %6s %7s %5s %10s %9s %9s %9s %9s %9s %7s%s\n", "", "scheduling",
                "seqs", "tokens", "wait ms", "lanes", "tokens/s", "goodput", "TTFT p50",
                ttft.c_str(), "ITL p50", itl.c_str(), "lost",
                banded ? ("  " + ttft + " band    " + itl + " band").c_str() : "");
  rows_of(out, r.pareto, distinct, r.best, rows, same_gen_figures);
  return out;
}

}  // namespace batchscope
