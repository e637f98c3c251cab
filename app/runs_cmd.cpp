// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/cli_args.h"
#include "app/run_output.h"
#include "common/build_info.h"
#include "common/file_text.h"
#include "traffic/gen_load.h"
#ifdef BATCHSCOPE_WITH_HISTORY
#include "common/text_out.h"
#include "runs/history.h"
#include "runs/history_figures.h"
#include "runs/history_writer.h"
#include "runs/run_report.h"
#include "traffic/kept_export.h"
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
         "The run history (docs/history.md): every bench, tune and recorded run, with the\n"
         "machine, LibTorch, BLAS and model file it ran on, its options, traffic and figures.\n"
         "list shows the newest first (DATE in UTC: 2026-11-28 or 2026-11-28T19:00:00Z);\n"
         "compare prints both runs' figures, the change, and what differs in their context\n"
         "(--plot: their latency fans overlaid); export writes a run as bench would have\n"
         "(bodies: the request bodies serve kept); import keeps bench's JSON summary.\n"
         "Every subcommand takes --history FILE (default $BATCHSCOPE_HISTORY, else\n"
         "$XDG_DATA_HOME/batchscope/history.sqlite).\n";
}

std::string report_help() {
  return "usage: batchscope report ID [ID...] --out FILE.html [--title TEXT] [--history FILE]\n"
         "Writes kept runs as one self-contained HTML page to share: no script and nothing\n"
         "fetched, so it opens offline in any browser. Per run: the latency fan over time\n"
         "(p50, p90 to p99), throughput over time and the batch-size histogram, the runs\n"
         "overlaid; then their figures side by side, their options and traffic, and the\n"
         "machine, LibTorch (a Python model's interpreter and class) and model file each ran\n"
         "on, with the rows that differ marked.\n";
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

const Fail fail{"runs"};

Expected<int64_t> parse_id(const std::string& text) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 1)
    return invalid_argument("run id '" + text + "' is not a run id (a whole number from 1; " +
                            "batchscope runs list shows them)");
  return v;
}

// A kept run's picture, as bench --plot draws it.
int export_png(History& h, const HistoryRun& row, const std::string& out) {
#ifdef BATCHSCOPE_WITH_QT
  if (row.kind == "tune" && row.parent_id == 0) {
    return fail("run " + std::to_string(row.id) + " is a tune: it keeps its result (--format " +
                "json); its live runs are runs of their own, listed by batchscope runs show " +
                std::to_string(row.id));
  }
  if (row.generative()) {
    auto g = load_gen_run(h, row);
    if (!g) return fail(g.error().message, 1);
    if (Status st = write_gen_run_plot(*g, summarize_gen(*g, 0, 0), out); !st)
      return fail(st.message(), 1);
    std::printf("  wrote %s (TTFT and ITL fans, tokens/s, sequences)\n", out.c_str());
    return 0;
  }
  auto run = h.load(row.id);
  if (!run) return fail(run.error().message, 1);
  const double window_s = std::clamp(run->config.duration_s / 40.0, 0.1, 10.0);
  const RunSummary s = summarize_run(
      *run, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(window_s)));
  if (Status st = write_run_plot(*run, s, out); !st) return fail(st.message(), 1);
  std::printf("  wrote %s (latency fan, queue depth, batch sizes)\n", out.c_str());
  return 0;
#else
  (void)h, (void)row, (void)out;
  return fail("--format png needs a build with Qt");
#endif
}

int export_run(History& h, int64_t id, std::map<std::string, std::string>& flags) {
  std::string format, out;
  if (Status s = cli::take_fields(flags, {cli::text("format", format), cli::text("out", out)});
      !s || !(s = cli::no_flags_left(flags, "runs"))) {
    return fail(s.message());
  }
  if (format.empty()) return fail("runs export needs --format json|csv|trace|png|bodies");
  if (out.empty()) return fail("runs export needs --out FILE");
  auto row = h.get(id);
  if (!row) return fail(row.error().message);
  if (format == "png") return export_png(h, *row, out);
  auto e = export_kept_run(h, *row, format, out);
  if (!e) return fail(e.error().message, e.error().code == ErrorCode::kInvalidArgument ? 2 : 1);
  if (!e->note.empty()) std::printf("%s\n", e->note.c_str());
  for (const KeptFile& f : e->files) {
    if (!save_export(f.path, f.text, f.what.c_str())) return 1;
  }
  return 0;
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
  const Fail fail_r{"report"};
  std::vector<std::string> positional, rest;
  split_args(args, 0, positional, rest);
  auto flags = cli::parse_flags(rest);
  if (!flags) return fail_r(flags.error().message);
  std::string path = default_history_path(), out, title;
  if (Status s = cli::take_fields(
          *flags, {cli::text("history", path), cli::text("out", out), cli::text("title", title)});
      !s || !(s = cli::no_flags_left(*flags, "report"))) {
    return fail_r(s.message());
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
  auto html = kept_report_html(**h, ids, title, "Batchscope " + build_label());
  if (!html)
    return fail_r(html.error().message, html.error().code == ErrorCode::kInvalidArgument ? 2 : 1);
  return save_export(out, *html, "HTML report; opens offline in any browser") ? 0 : 1;
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
    return runs_list(h, *flags);
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
      auto text = read_file_text(file);
      auto id = text ? keep_imported_run(h, *text) : Expected<int64_t>(text.error());
      if (!id) {
        std::cerr << "batchscope runs: " << (text ? file + ": " : "") << id.error().message << "\n";
        rc = 1;
        continue;
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
    return runs_show(h, ids[0]);
  }
  if (sub == "compare") {
    if (!need(2)) return fail("runs compare takes two ids");
    return runs_compare(h, ids[0], ids[1], plot);
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
