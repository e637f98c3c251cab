// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/history_text.h"

#include <cmath>
#include <cstdio>

#include "common/text_out.h"
#include "runs/history_figures.h"

namespace batchscope {
namespace {

std::string number_text(double v) {
  char buf[32];
  if (std::fabs(v) >= 100 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3f", v);
  std::string s = buf;
  if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
  return s;
}

// "2026-11-28T19:40:00.123Z" as "2026-11-28 19:40:00", or with the
// milliseconds where kept and asked for.
std::string when(const std::string& iso, bool ms = false) {
  std::string s = iso;
  if (s.size() >= 19) {
    s[10] = ' ';
    const bool has_ms = s.size() >= 23 && s[19] == '.';
    s.resize(ms && has_ms ? 23 : 19);
  }
  return s;
}

std::string status_of(const HistoryRun& r) {
  std::string s = r.finished() ? "" : "unfinished";
  if (r.finished() && !stop_note(r.summary).empty()) s = "stopped by the user";
  if (r.requests_kept < r.requests_seen) {
    if (!s.empty()) s += ", ";
    s += "cut at " + std::to_string(r.requests_kept) + " of " + std::to_string(r.requests_seen) +
         " requests";
  }
  return s;
}

std::string change_text(const FigureDiff& d) {
  if (!d.a || !d.b) return "";
  const double diff = *d.b - *d.a;
  std::string s = (diff >= 0 ? "+" : "") + number_text(diff);
  if (*d.a != 0) append_format(s, " (%+.1f%%)", 100.0 * diff / std::fabs(*d.a));
  return s;
}

}  // namespace

std::string runs_table_text(const std::vector<HistoryRun>& runs) {
  std::string out;
  append_format(out, "%5s  %-19s  %-10s  %-14s  %10s  %9s  %9s  %s\n", "ID", "STARTED (UTC)",
                "KIND", "MODEL", "REQ/S", "P50 MS", "P99 MS", "TRAFFIC");
  for (const HistoryRun& r : runs) {
    const auto figs = summary_figures(r.summary);
    auto cell = [&](const char* name) {
      auto v = figure(figs, name);
      return v ? number_text(*v) : std::string("-");
    };
    std::string what = r.label;
    if (r.parent_id > 0) what += " (in run " + std::to_string(r.parent_id) + ")";
    if (const std::string s = status_of(r); !s.empty()) what += "  [" + s + "]";
    append_format(out, "%5lld  %-19s  %-10s  %-14s  %10s  %9s  %9s  %s\n",
                  static_cast<long long>(r.id), when(r.started_at).c_str(), r.kind.c_str(),
                  r.model.c_str(), cell("throughput_rps").c_str(), cell("p50_ms").c_str(),
                  cell("p99_ms").c_str(), what.c_str());
  }
  return out;
}

std::string run_text(const HistoryRun& r, const std::vector<HistoryRun>& parts) {
  std::string out;
  append_format(out, "run %lld: %s, %s\n", static_cast<long long>(r.id), r.kind.c_str(),
                r.label.c_str());
  append_format(out, "  started   %s UTC\n", when(r.started_at, true).c_str());
  append_format(out, "  finished  %s\n",
                r.finished() ? (when(r.finished_at, true) + " UTC").c_str()
                             : "no: the run was cut short (the process ended while recording)");
  if (r.finished()) {
    if (auto s = seconds_between(r.started_at, r.finished_at)) {
      append_format(out, "  duration  %s s\n", number_text(*s).c_str());
    }
    if (const std::string why = stop_note(r.summary); !why.empty()) {
      append_format(out, "  stopped   %s\n", why.c_str());
    }
  }
  append_format(out, "  model     %s\n", r.model.c_str());
  append_format(out, "  traffic   %s -> %s, %s s, seed %llu\n", r.config.pattern.c_str(),
                r.config.target.c_str(), number_text(r.config.duration_s).c_str(),
                static_cast<unsigned long long>(r.config.seed));
  append_format(out, "  options   %s\n", options_text(r).c_str());
  if (r.parent_id > 0)
    append_format(out, "  part of   run %lld\n", static_cast<long long>(r.parent_id));
  if (!parts.empty()) {
    std::string ids;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it)
      ids += (ids.empty() ? "" : ", ") + std::to_string(it->id);
    append_format(out, "  live runs %s\n", ids.c_str());
  }
  if (r.requests_seen > 0 || r.kind != "tune") {
    append_format(out, "  requests  %llu kept of %llu%s\n",
                  static_cast<unsigned long long>(r.requests_kept),
                  static_cast<unsigned long long>(r.requests_seen),
                  r.requests_kept < r.requests_seen ? " (cut by --history-requests)" : "");
  }
  const auto figs = summary_figures(r.summary);
  if (!figs.empty()) out += "figures\n";
  for (const Figure& f : figs)
    append_format(out, "  %-24s %s\n", f.name.c_str(), number_text(f.value).c_str());
  out += "context\n";
  HistoryRun empty;  // the context against nothing: every key of it
  empty.config = r.config;
  empty.model = r.model;
  for (const ContextDiff& d : compare_context(r, empty)) {
    if (d.key.rfind("options.", 0) == 0) continue;
    append_format(out, "  %-30s %s\n", d.key.c_str(), d.a.c_str());
  }
  return out;
}

std::string comparison_text(const HistoryRun& a, const HistoryRun& b) {
  auto name = [](const HistoryRun& r) {
    return "run " + std::to_string(r.id) + " (" + when(r.started_at).substr(0, 10) + ", " + r.kind +
           ", " + r.model + (r.finished() ? "" : ", unfinished") + ")";
  };
  std::string out;
  append_format(out, "A: %s\nB: %s\n", name(a).c_str(), name(b).c_str());
  const std::string ha = "run " + std::to_string(a.id), hb = "run " + std::to_string(b.id);
  append_format(out, "%-18s  %14s  %14s  %s\n", "FIGURE", ha.c_str(), hb.c_str(), "B - A");
  for (const FigureDiff& d : compare_figures(a, b)) {
    append_format(out, "%-18s  %14s  %14s  %s\n", d.name.c_str(),
                  d.a ? number_text(*d.a).c_str() : "-", d.b ? number_text(*d.b).c_str() : "-",
                  change_text(d).c_str());
  }
  const auto ctx = compare_context(a, b);
  if (ctx.empty()) {
    out += "same machine, model file, options and traffic\n";
  } else {
    out += "where they differ\n";
    for (const ContextDiff& d : ctx)
      append_format(out, "  %-24s %s  |  %s\n", d.key.c_str(), d.a.c_str(), d.b.c_str());
  }
  return out;
}

}  // namespace batchscope
