// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <iostream>

#include "app/run_output.h"
#include "runs/history_figures.h"
#include "runs/history_text.h"
#include "traffic/kept_summary.h"
#ifdef BATCHSCOPE_WITH_QT
#include "ui/runs/run_plot.h"
#endif

namespace batchscope {
namespace {

const Fail fail{"runs"};

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
  for (HistoryRun& r : *runs) {
    if (auto s = kept_summary(h, r)) r.summary = *s;  // a run cut short: from its records
  }
  std::fputs(runs_table_text(*runs).c_str(), stdout);
  return 0;
}

int runs_show(History& h, int64_t id) {
  auto r = h.get(id);
  if (!r) return fail(r.error().message);
  if (auto s = kept_summary(h, *r)) r->summary = *s;  // a run cut short: from its records
  HistoryFilter mine;
  mine.parent = r->id;
  auto parts = h.list(mine);
  std::fputs(run_text(*r, parts ? *parts : std::vector<HistoryRun>{}).c_str(), stdout);
  return 0;
}

int runs_compare(History& h, int64_t ia, int64_t ib, const std::string& plot) {
  auto a = h.get(ia);
  if (!a) return fail(a.error().message);
  auto b = h.get(ib);
  if (!b) return fail(b.error().message);
  for (HistoryRun* r : {&*a, &*b}) {
    if (auto s = kept_summary(h, *r)) r->summary = *s;  // a run cut short: from its records
  }
  std::fputs(comparison_text(*a, *b).c_str(), stdout);
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
