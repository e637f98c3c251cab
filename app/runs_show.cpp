// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "runs/history_figures.h"
#include "traffic/kept_summary.h"
#ifdef BATCHSCOPE_WITH_QT
#include "ui/runs/run_plot.h"
#endif

namespace batchscope {
namespace {

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope runs: " << message << "\n";
  return code;
}

Expected<std::string> parse_since(const std::string& text) {
  auto digits = [&](size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i)
      if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    return true;
  };
  const bool date = text.size() >= 10 && digits(0, 4) && text[4] == '-' && digits(5, 2) &&
                    text[7] == '-' && digits(8, 2);
  if (!date || (text.size() != 10 && text.size() != 20 && text.size() != 19))
    return invalid_argument("--since " + text + " is not a date; use 2026-11-28 or " +
                            "2026-11-28T19:00:00Z (UTC)");
  return text.size() == 10 ? text + "T00:00:00Z" : text;
}

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

}  // namespace

int runs_list(History& h, std::map<std::string, std::string>& flags) {
  HistoryFilter f;
  for (auto& [name, value] : flags) {
    if (name == "model")
      f.model = value;
    else if (name == "kind") {
      if (value != "bench" && value != "tune" && value != "recorded" && value != "generation" &&
          value != "serve")
        return fail("--kind " + value + " is not one of bench, tune, recorded, generation, serve");
      f.kind = value;
    } else if (name == "since") {
      auto s = parse_since(value);
      if (!s) return fail(s.error().message);
      f.since = *s;
    } else if (name == "grep")
      f.text = value;
    else
      return fail("unknown option --" + name + " for runs list (see batchscope runs --help)");
  }
  auto runs = h.list(f);
  if (!runs) return fail(runs.error().message, 1);
  if (runs->empty()) {
    std::printf(
        "no runs in %s%s\n", h.path().c_str(),
        f.model.empty() && f.kind.empty() && f.since.empty() && f.text.empty() ? "" : " match");
    return 0;
  }
  std::printf("%5s  %-19s  %-10s  %-14s  %10s  %9s  %9s  %s\n", "ID", "STARTED (UTC)", "KIND",
              "MODEL", "REQ/S", "P50 MS", "P99 MS", "TRAFFIC");
  for (HistoryRun& r : *runs) {
    if (auto s = kept_summary(h, r)) r.summary = *s;  // a run cut short: from its records
    const auto figs = summary_figures(r.summary);
    auto cell = [&](const char* name) {
      auto v = figure(figs, name);
      return v ? number_text(*v) : std::string("-");
    };
    std::string what = r.label;
    if (r.parent_id > 0) what += " (in run " + std::to_string(r.parent_id) + ")";
    if (const std::string s = status_of(r); !s.empty()) what += "  [" + s + "]";
    std::printf("%5lld  %-19s  %-10s  %-14s  %10s  %9s  %9s  %s\n", static_cast<long long>(r.id),
                when(r.started_at).c_str(), r.kind.c_str(), r.model.c_str(),
                cell("throughput_rps").c_str(), cell("p50_ms").c_str(), cell("p99_ms").c_str(),
                what.c_str());
  }
  return 0;
}

namespace {

void print_context(const HistoryRun& r) {
  HistoryRun empty;
  empty.config = r.config;
  empty.model = r.model;
  for (const ContextDiff& d : compare_context(r, empty)) {
    if (d.key.rfind("options.", 0) == 0) continue;
    std::printf("  %-30s %s\n", d.key.c_str(), d.a.c_str());
  }
}

}  // namespace

int runs_show(History& h, int64_t id) {
  auto r = h.get(id);
  if (!r) return fail(r.error().message);
  if (auto s = kept_summary(h, *r)) r->summary = *s;  // a run cut short: from its records
  std::printf("run %lld: %s, %s\n", static_cast<long long>(r->id), r->kind.c_str(),
              r->label.c_str());
  std::printf("  started   %s UTC\n", when(r->started_at, true).c_str());
  std::printf("  finished  %s\n",
              r->finished() ? (when(r->finished_at, true) + " UTC").c_str()
                            : "no: the run was cut short (the process ended while recording)");
  if (r->finished()) {
    if (auto s = seconds_between(r->started_at, r->finished_at)) {
      std::printf("  duration  %s s\n", number_text(*s).c_str());
    }
    if (const std::string why = stop_note(r->summary); !why.empty()) {
      std::printf("  stopped   %s\n", why.c_str());
    }
  }
  std::printf("  model     %s\n", r->model.c_str());
  std::printf("  traffic   %s -> %s, %s s, seed %llu\n", r->config.pattern.c_str(),
              r->config.target.c_str(), number_text(r->config.duration_s).c_str(),
              static_cast<unsigned long long>(r->config.seed));
  std::printf("  options   %s\n", (r->generative() ? describe_generation(r->config.options)
                                                   : describe(r->config.options))
                                      .c_str());
  if (r->parent_id > 0) std::printf("  part of   run %lld\n", static_cast<long long>(r->parent_id));
  HistoryFilter mine;
  mine.parent = r->id;
  auto parts = h.list(mine);
  if (parts && !parts->empty()) {
    std::string ids;
    for (auto it = parts->rbegin(); it != parts->rend(); ++it)
      ids += (ids.empty() ? "" : ", ") + std::to_string(it->id);
    std::printf("  live runs %s\n", ids.c_str());
  }
  if (r->requests_seen > 0 || r->kind != "tune") {
    std::printf("  requests  %llu kept of %llu%s\n",
                static_cast<unsigned long long>(r->requests_kept),
                static_cast<unsigned long long>(r->requests_seen),
                r->requests_kept < r->requests_seen ? " (cut by --history-requests)" : "");
  }
  const auto figs = summary_figures(r->summary);
  if (!figs.empty()) std::printf("figures\n");
  for (const Figure& f : figs)
    std::printf("  %-24s %s\n", f.name.c_str(), number_text(f.value).c_str());
  std::printf("context\n");
  print_context(*r);
  return 0;
}

namespace {

std::string change_text(const FigureDiff& d) {
  if (!d.a || !d.b) return "";
  const double diff = *d.b - *d.a;
  std::string s = (diff >= 0 ? "+" : "") + number_text(diff);
  if (*d.a != 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * diff / std::fabs(*d.a));
    s += pct;
  }
  return s;
}

}  // namespace

int runs_compare(History& h, int64_t ia, int64_t ib, const std::string& plot) {
  auto a = h.get(ia);
  if (!a) return fail(a.error().message);
  auto b = h.get(ib);
  if (!b) return fail(b.error().message);
  for (HistoryRun* r : {&*a, &*b}) {
    if (auto s = kept_summary(h, *r)) r->summary = *s;  // a run cut short: from its records
  }
  auto name = [](const HistoryRun& r) {
    return "run " + std::to_string(r.id) + " (" + when(r.started_at).substr(0, 10) + ", " + r.kind +
           ", " + r.model + (r.finished() ? "" : ", unfinished") + ")";
  };
  std::printf("A: %s\nB: %s\n", name(*a).c_str(), name(*b).c_str());
  const std::string ha = "run " + std::to_string(ia), hb = "run " + std::to_string(ib);
  std::printf("%-18s  %14s  %14s  %s\n", "FIGURE", ha.c_str(), hb.c_str(), "B - A");
  for (const FigureDiff& d : compare_figures(*a, *b)) {
    std::printf("%-18s  %14s  %14s  %s\n", d.name.c_str(), d.a ? number_text(*d.a).c_str() : "-",
                d.b ? number_text(*d.b).c_str() : "-", change_text(d).c_str());
  }
  const auto ctx = compare_context(*a, *b);
  if (ctx.empty()) {
    std::printf("same machine, model file, options and traffic\n");
  } else {
    std::printf("where they differ\n");
    for (const ContextDiff& d : ctx)
      std::printf("  %-24s %s  |  %s\n", d.key.c_str(), d.a.c_str(), d.b.c_str());
  }
  if (plot.empty()) return 0;
#ifdef BATCHSCOPE_WITH_QT
  const RunSummary sa = summary_from_json(a->summary), sb = summary_from_json(b->summary);
  const std::string title = "run " + std::to_string(ia) + " (blue) against run " +
                            std::to_string(ib) + " (orange): latency over time";
  if (Status s = write_fan_overlay(
          {{"run " + std::to_string(ia), &sa}, {"run " + std::to_string(ib), &sb}}, title, plot);
      !s)
    return fail(s.message(), 1);
  std::printf("  wrote %s (both runs' latency fans overlaid)\n", plot.c_str());
  return 0;
#else
  return fail("--plot needs a build with Qt");
#endif
}

}  // namespace batchscope
