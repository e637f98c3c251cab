// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/kept_export.h"

#include <algorithm>
#include <chrono>

#include "common/text_out.h"
#include "runs/history_figures.h"
#include "runs/run_record.h"
#include "runs/run_report.h"
#include "traffic/gen_load.h"
#include "traffic/kept_summary.h"

namespace batchscope {
namespace {

Expected<KeptExport> bodies_of(History& h, const HistoryRun& row, const std::string& out) {
  // One JSON object a line: when the request arrived, its route, its body.
  auto bodies = h.load_bodies(row.id);
  if (!bodies) return bodies.error();
  if (bodies->empty()) {
    return invalid_argument("run " + std::to_string(row.id) +
                            " keeps no request bodies (serve --record --record-bodies keeps them)");
  }
  std::string text;
  for (const HistoryBody& b : *bodies) {
    text += "{\"at_ms\":";
    append_json_number(text, std::chrono::duration<double, std::milli>(b.at).count());
    text += ",\"route\":";
    append_json_string(text, b.route);
    text += ",\"body\":";
    append_json_string(text, b.body);
    text += "}\n";
  }
  return KeptExport{{{out, std::move(text), "request bodies, a JSON line each"}}, {}};
}

}  // namespace

Expected<KeptExport> export_kept_run(History& h, const HistoryRun& row, const std::string& format,
                                     const std::string& out) {
  if (format == "json") return KeptExport{{{out, row.summary, "JSON summary"}}, {}};
  if (format == "bodies") return bodies_of(h, row, out);
  if (format != "csv" && format != "trace") {
    return invalid_argument("--format " + format + " is not one of json, csv, trace, png, bodies");
  }
  if (row.kind == "tune" && row.parent_id == 0) {
    const std::string id = std::to_string(row.id);
    return invalid_argument("run " + id + " is a tune: it keeps its result (--format json); " +
                            "its live runs are runs of their own, listed by batchscope runs show " +
                            id);
  }
  if (row.generative()) {
    // Its requests' token timings and its engine's steps, as bench exports them.
    auto g = load_gen_run(h, row);
    if (!g) return g.error();
    if (format == "csv") {
      return KeptExport{{{out + "_requests.csv", gen_requests_csv(*g), "CSV per request"}}, {}};
    }
    return KeptExport{
        {{out, gen_trace_json(*g), "Chrome trace, one row of steps; open in Perfetto"}}, {}};
  }
  auto run = h.load(row.id);
  if (!run) return run.error();
  KeptExport e;
  if (row.requests_kept < row.requests_seen) {
    e.note = "  run " + std::to_string(row.id) + " kept " + std::to_string(row.requests_kept) +
             " of its " + std::to_string(row.requests_seen) + " requests; the " + format +
             " has those";
  }
  if (format == "trace") {
    e.files.push_back({out, run_trace_json(*run), "Chrome trace; open in Perfetto"});
    return e;
  }
  const double window_s = std::clamp(run->config.duration_s / 40.0, 0.1, 10.0);
  const RunSummary s = summarize_run(
      *run, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(window_s)));
  e.files.push_back({out + "_requests.csv", run_requests_csv(*run), "CSV per request"});
  e.files.push_back({out + "_windows.csv", run_windows_csv(s), "CSV per window"});
  return e;
}

Expected<std::string> kept_report_html(History& h, const std::vector<int64_t>& ids,
                                       std::string title, const std::string& made_by) {
  std::vector<HistoryRun> runs;
  std::vector<std::vector<HistoryGenRequest>> generation;
  for (int64_t id : ids) {
    auto r = h.get(id);
    if (!r) return r.error();
    if (auto s = kept_summary(h, *r)) r->summary = *s;  // a run cut short: from its records
    generation.emplace_back();
    if (r->generative()) {
      auto rows = h.load_generation(r->id, TimePoint{});
      if (!rows) return rows.error();
      generation.back() = std::move(*rows);
    }
    runs.push_back(std::move(*r));
  }
  if (title.empty() && runs.size() == 1) title = runs[0].label;
  if (title.empty()) {
    title = "Batchscope runs";
    for (size_t i = 0; i < runs.size(); ++i) title += (i ? ", " : " ") + std::to_string(runs[i].id);
  }
  return run_report_html(runs, title, made_by, utc_now(), generation);
}

Expected<int64_t> keep_imported_run(History& h, const std::string& text) {
  auto run = import_bench_json(text);
  if (!run) return run.error();
  Status s = h.begin();
  auto id = s ? h.begin_run(*run) : Expected<int64_t>(s.error());
  if (id) s = h.commit();
  if (!id || !s) {
    h.rollback();
    return id ? s.error() : id.error();
  }
  return *id;
}

}  // namespace batchscope
