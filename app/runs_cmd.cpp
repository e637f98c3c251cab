// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/runs_cmd.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/build_info.h"
#include "app/cli_args.h"
#include "app/history_setup.h"
#include "app/run_output.h"
#include "traffic/gen_load.h"
#ifdef BATCHSCOPE_WITH_HISTORY
#include "common/text_out.h"
#include "runs/history.h"
#include "runs/history_figures.h"
#include "runs/history_writer.h"
#include "runs/run_report.h"
#include "traffic/kept_summary.h"
#endif
#ifdef BATCHSCOPE_WITH_QT
#include "ui/generation/gen_run_plot.h"
#include "ui/runs/run_plot.h"
#endif

namespace batchscope {

std::string runs_help() {
  return "usage: batchscope runs list [--model M] [--kind bench|tune|recorded|generation|serve]\n"
         "                            [--since DATE] [--grep TEXT]\n"
         "       batchscope runs show ID\n"
         "       batchscope runs compare ID ID [--plot FILE.png]\n"
         "       batchscope runs export ID --format json|csv|trace|png|bodies --out FILE\n"
         "       batchscope runs rm ID [ID...]\n"
         "       batchscope runs import FILE.json [FILE.json...]\n"
         "The run history: every bench, tune and recorded run, with the machine, LibTorch,\n"
         "BLAS and model file it ran on, its options, traffic and figures. list shows the\n"
         "newest first; DATE is UTC, 2026-11-28 or 2026-11-28T19:00:00Z. compare prints\n"
         "both runs' figures with the change, and what differs in their context (--plot:\n"
         "their latency fans overlaid, as a PNG). export\n"
         "writes a run as bench would have (csv: FILE_requests.csv and FILE_windows.csv;\n"
         "png needs a build with Qt; bodies: the request bodies serve --record-bodies kept,\n"
         "a JSON line each). import keeps a `bench --json` summary as a run.\n"
         "Every subcommand takes --history FILE (default $BATCHSCOPE_HISTORY, else\n"
         "$XDG_DATA_HOME/batchscope/history.sqlite).\n";
}

std::string report_help() {
  return "usage: batchscope report ID [ID...] --out FILE.html [--title TEXT] [--history FILE]\n"
         "Writes kept runs as one self-contained HTML page to share: no script and nothing\n"
         "fetched, so it opens offline in any browser. Per run: the latency fan over time\n"
         "(p50, p90 to p99), throughput over time and the batch-size histogram, the runs\n"
         "overlaid; then their figures side by side, their options and traffic, and the\n"
         "machine, LibTorch and model file each ran on, with the rows that differ marked.\n";
}

#ifndef BATCHSCOPE_WITH_HISTORY

int run_runs(const std::vector<std::string>&) {
  std::cerr << "batchscope runs: this build has no run history (it needs SQLite and OpenSSL)\n";
  return 2;
}

int run_report(const std::vector<std::string>&) {
  std::cerr << "batchscope report: this build has no run history (it needs SQLite and OpenSSL)\n";
  return 2;
}

#else

namespace {

int fail(const std::string& message, int code = 2) {
  std::cerr << "batchscope runs: " << message << "\n";
  return code;
}

Expected<int64_t> parse_id(const std::string& text) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 1)
    return invalid_argument("run id '" + text + "' is not a run id (a whole number from 1; " +
                            "batchscope runs list shows them)");
  return v;
}

// "2026-11-28" or "2026-11-28T19:00:00Z" as the history's UTC text.
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

int list(History& h, std::map<std::string, std::string>& flags) {
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

void print_context(const HistoryRun& r) {
  HistoryRun empty;
  empty.config = r.config;
  empty.model = r.model;
  for (const ContextDiff& d : compare_context(r, empty)) {
    if (d.key.rfind("options.", 0) == 0) continue;
    std::printf("  %-30s %s\n", d.key.c_str(), d.a.c_str());
  }
}

int show(History& h, int64_t id) {
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

int compare(History& h, int64_t ia, int64_t ib, const std::string& plot) {
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

int export_run(History& h, int64_t id, std::map<std::string, std::string>& flags) {
  std::string format, out;
  for (auto& [name, value] : flags) {
    if (name == "format")
      format = value;
    else if (name == "out")
      out = value;
    else
      return fail("unknown option --" + name + " for runs export (see batchscope runs --help)");
  }
  if (format.empty()) return fail("runs export needs --format json|csv|trace|png|bodies");
  if (out.empty()) return fail("runs export needs --out FILE");
  auto row = h.get(id);
  if (!row) return fail(row.error().message);
  if (format == "json") return save_export(out, row->summary, "JSON summary") ? 0 : 1;
  if (format == "bodies") {
    // One JSON object a line: when the request arrived, its route, its body.
    auto bodies = h.load_bodies(id);
    if (!bodies) return fail(bodies.error().message, 1);
    if (bodies->empty()) {
      return fail("run " + std::to_string(id) +
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
    return save_export(out, text, "request bodies, a JSON line each") ? 0 : 1;
  }
  if (format != "csv" && format != "trace" && format != "png")
    return fail("--format " + format + " is not one of json, csv, trace, png, bodies");
  if (row->kind == "tune" && row->parent_id == 0) {
    return fail("run " + std::to_string(id) + " is a tune: it keeps its result (--format json); " +
                "its live runs are runs of their own, listed by batchscope runs show " +
                std::to_string(id));
  }
  if (row->generative()) {
    // Its requests' token timings and its engine's steps, as bench exports them.
    auto loaded = load_gen_run(h, *row);
    if (!loaded) return fail(loaded.error().message, 1);
    const GenRun& g = *loaded;
    if (format == "csv")
      return save_export(out + "_requests.csv", gen_requests_csv(g), "CSV per request") ? 0 : 1;
    if (format == "trace")
      return save_export(out, gen_trace_json(g), "Chrome trace, one row of steps; open in Perfetto")
                 ? 0
                 : 1;
#ifdef BATCHSCOPE_WITH_QT
    const GenSummary gs = summarize_gen(g, 0, 0);
    if (Status st = write_gen_run_plot(g, gs, out); !st) return fail(st.message(), 1);
    std::printf("  wrote %s (TTFT and ITL fans, tokens/s, sequences)\n", out.c_str());
    return 0;
#else
    return fail("--format png needs a build with Qt");
#endif
  }
  auto run = h.load(id);
  if (!run) return fail(run.error().message, 1);
  if (row->requests_kept < row->requests_seen) {
    std::printf("  run %lld kept %llu of its %llu requests; the %s has those\n",
                static_cast<long long>(id), static_cast<unsigned long long>(row->requests_kept),
                static_cast<unsigned long long>(row->requests_seen), format.c_str());
  }
  if (format == "trace")
    return save_export(out, run_trace_json(*run), "Chrome trace; open in Perfetto") ? 0 : 1;
  const double window_s = std::clamp(run->config.duration_s / 40.0, 0.1, 10.0);
  const RunSummary s = summarize_run(
      *run, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(window_s)));
  if (format == "csv") {
    const bool ok = save_export(out + "_requests.csv", run_requests_csv(*run), "CSV per request") &&
                    save_export(out + "_windows.csv", run_windows_csv(s), "CSV per window");
    return ok ? 0 : 1;
  }
#ifdef BATCHSCOPE_WITH_QT
  if (Status st = write_run_plot(*run, s, out); !st) return fail(st.message(), 1);
  std::printf("  wrote %s (latency fan, queue depth, batch sizes)\n", out.c_str());
  return 0;
#else
  return fail("--format png needs a build with Qt");
#endif
}

// Ids first, then flags.
void split_args(const std::vector<std::string>& args, size_t from,
                std::vector<std::string>& positional, std::vector<std::string>& rest) {
  for (size_t i = from; i < args.size(); ++i) {
    if (args[i].rfind("--", 0) == 0) {
      rest.assign(args.begin() + static_cast<long>(i), args.end());
      return;
    }
    positional.push_back(args[i]);
  }
}

}  // namespace

int run_report(const std::vector<std::string>& args) {
  auto fail_r = [](const std::string& m, int code = 2) {
    std::cerr << "batchscope report: " << m << "\n";
    return code;
  };
  std::vector<std::string> positional, rest;
  split_args(args, 0, positional, rest);
  auto flags = cli::parse_flags(rest);
  if (!flags) return fail_r(flags.error().message);
  std::string path = default_history_path(), out, title;
  for (auto& [name, value] : *flags) {
    if (name == "history")
      path = value;
    else if (name == "out")
      out = value;
    else if (name == "title")
      title = value;
    else
      return fail_r("unknown option --" + name + " (see batchscope report --help)");
  }
  if (positional.empty()) return fail_r("which runs? give their ids (batchscope runs list)");
  if (out.empty()) return fail_r("--out FILE.html is required");
  std::vector<int64_t> ids;
  for (const std::string& p : positional) {
    auto id = parse_id(p);
    if (!id) return fail_r(id.error().message);
    ids.push_back(*id);
  }
  auto h = History::open(path, {.read_only = true});
  if (!h) return fail_r(h.error().message, 1);
  std::vector<HistoryRun> runs;
  for (int64_t id : ids) {
    auto r = (*h)->get(id);
    if (!r) return fail_r(r.error().message);
    if (auto s = kept_summary(**h, *r)) r->summary = *s;  // a run cut short: from its records
    runs.push_back(std::move(*r));
  }
  if (title.empty()) {
    title = runs.size() == 1 ? runs[0].label : "Batchscope runs";
    if (runs.size() > 1) {
      for (size_t i = 0; i < runs.size(); ++i)
        title += (i ? ", " : " ") + std::to_string(runs[i].id);
    }
  }
  std::vector<std::vector<HistoryGenRequest> > generation(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].generative()) continue;
    auto rows = (*h)->load_generation(runs[i].id, TimePoint{});
    if (!rows) return fail_r(rows.error().message, 1);
    generation[i] = std::move(*rows);
  }
  const std::string html =
      run_report_html(runs, title, "Batchscope " + build_label(), utc_now(), generation);
  return save_export(out, html, "HTML report; opens offline in any browser") ? 0 : 1;
}

int run_runs(const std::vector<std::string>& args) {
  if (args.empty()) return fail("which? list, show, compare, export, rm or import");
  const std::string sub = args[0];
  std::vector<std::string> positional, rest;
  split_args(args, 1, positional, rest);
  auto flags = cli::parse_flags(rest);
  if (!flags) return fail(flags.error().message);
  std::string path = default_history_path();
  if (auto it = flags->find("history"); it != flags->end()) {
    path = it->second;
    flags->erase(it);
  }
  const bool writes = sub == "rm" || sub == "import";
  auto opened = History::open(path, {.read_only = !writes});
  if (!opened) {
    // Reading a history nobody has written yet: there is nothing in it.
    if (!writes && !std::ifstream(path).good()) {
      if (sub == "list" || sub == "ids") {
        if (sub == "list") std::printf("no runs in %s (nothing has been kept yet)\n", path.c_str());
        return 0;
      }
    }
    return fail(opened.error().message, 1);
  }
  History& h = **opened;
  auto need = [&](size_t n) { return positional.size() == n; };
  if (sub == "list") {
    if (!need(0)) return fail("runs list takes no ids; filter with --model, --kind, --since");
    return list(h, *flags);
  }
  if (sub == "ids") {  // for tab completion
    auto runs = h.list();
    if (!runs) return 1;
    for (const HistoryRun& r : *runs) std::printf("%lld\n", static_cast<long long>(r.id));
    return 0;
  }
  if (sub == "import") {
    if (positional.empty()) return fail("runs import needs a bench --json FILE");
    if (!flags->empty())
      return fail("unknown option --" + flags->begin()->first + " for runs import");
    int rc = 0;
    for (const std::string& file : positional) {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::cerr << "batchscope runs: cannot read " << file << "\n";
        rc = 1;
        continue;
      }
      std::ostringstream text;
      text << in.rdbuf();
      auto run = import_bench_json(text.str());
      if (!run) {
        std::cerr << "batchscope runs: " << file << ": " << run.error().message << "\n";
        rc = 1;
        continue;
      }
      Status s = h.begin();
      auto id = s ? h.begin_run(*run) : Expected<int64_t>(s.error());
      if (id) s = h.commit();
      if (!id || !s) {
        h.rollback();
        return fail(id ? s.message() : id.error().message, 1);
      }
      std::printf("  kept %s as run %lld in %s\n", file.c_str(), static_cast<long long>(*id),
                  h.path().c_str());
    }
    return rc;
  }
  std::string plot;
  if (sub == "compare" && flags->count("plot")) {
    plot = (*flags)["plot"];
    flags->erase("plot");
  }
  if (!flags->empty() && sub != "export")
    return fail("unknown option --" + flags->begin()->first + " for runs " + sub);
  std::vector<int64_t> ids;
  for (const std::string& p : positional) {
    auto id = parse_id(p);
    if (!id) return fail(id.error().message);
    ids.push_back(*id);
  }
  if (sub == "show") {
    if (!need(1)) return fail("runs show takes one id");
    return show(h, ids[0]);
  }
  if (sub == "compare") {
    if (!need(2)) return fail("runs compare takes two ids");
    return compare(h, ids[0], ids[1], plot);
  }
  if (sub == "export") {
    if (!need(1)) return fail("runs export takes one id");
    return export_run(h, ids[0], *flags);
  }
  if (sub == "rm") {
    if (ids.empty()) return fail("runs rm needs an id");
    int rc = 0;
    for (int64_t id : ids) {
      if (Status s = h.remove(id); !s) {
        std::cerr << "batchscope runs: " << s.message() << "\n";
        rc = 1;
      } else {
        std::printf("  removed run %lld\n", static_cast<long long>(id));
      }
    }
    return rc;
  }
  return fail("unknown subcommand " + sub + "; use list, show, compare, export, rm or import");
}

#endif

}  // namespace batchscope
