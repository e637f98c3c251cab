// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <iostream>

#include "app/cli_args.h"
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

}  // namespace

int runs_list(History& h, std::map<std::string, std::string>& flags) {
  std::string model, kind, since, text;
  if (Status s = cli::take_fields(flags, {cli::text("model", model), cli::text("kind", kind),
                                          cli::text("since", since), cli::text("grep", text)});
      !s || !(s = cli::no_flags_left(flags, "runs"))) {
    return fail(s.message());
  }
  auto filter = parse_history_filter(model, kind, since, text);
  if (!filter) return fail(filter.error().message);
  const HistoryFilter& f = *filter;
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
