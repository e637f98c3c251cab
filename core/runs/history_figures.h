// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The figures of a kept run, read back from its summary JSON (what
// run_summary_json() wrote), for `runs list`, `runs show` and `runs compare`,
// and the context two runs differ in. A summary without a figure (a tune's,
// or one cut short) simply lacks it.
// Thread-safety: free functions.

#include <optional>
#include <string>
#include <vector>

#include "runs/history.h"

namespace batchscope {

struct Figure {
  std::string name;  // "throughput_rps", "p99_ms", ...
  double value = 0;
};

// In a fixed order: sent, ok, rejected, timed_out, errors, throughput_rps,
// p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, mean_ms, batch_mean,
// depth_mean, depth_max, lag_p99_ms; those the summary has.
std::vector<Figure> summary_figures(const std::string& summary_json);
std::optional<double> figure(const std::vector<Figure>& figures, const std::string& name);

// A summary with "stopped": `note` added (a run ended early, by whom), and
// that note back (empty where the run was not stopped). A summary that is
// not a JSON object becomes {"stopped": note}.
std::string with_stop_note(const std::string& summary_json, const std::string& note);
std::string stop_note(const std::string& summary_json);

// The RunSummary that run_summary_json() wrote, windows and batch-size
// histogram included; what the text lacks stays zero. The window's Runs panel
// lists and overlays kept runs from this without loading their records.
RunSummary summary_from_json(const std::string& summary_json);

// A row of a comparison: the figure in A and in B, B - A, and (B - A) / A.
struct FigureDiff {
  std::string name;
  std::optional<double> a, b;
};
std::vector<FigureDiff> compare_figures(const HistoryRun& a, const HistoryRun& b);

// Keys of the context, options and traffic whose values differ between the
// runs, as "machine.cpu", "model.sha256", "options.max_batch_size",
// "traffic"; with each side's value as text.
struct ContextDiff {
  std::string key, a, b;
};
std::vector<ContextDiff> compare_context(const HistoryRun& a, const HistoryRun& b);

// The run's options in a line: describe_generation() for a generation run,
// else describe(), which leaves preprocess_workers out at its default of 1;
// a Python model whose class has preprocess (its context's
// python.preprocess) names it even then, since its pool's size is part of
// what ran (0 prepares on the lanes).
std::string options_text(const HistoryRun& r);

// Reads what `batchscope bench --json` wrote into a run to keep: kind
// "bench" (its summary, config and, when the file has them, context and
// started_at), or "generation" for a language model's bench. The text comes from outside: anything
// that is not such a summary is an error naming what is missing or wrong, never a crash.
Expected<HistoryRun> import_bench_json(const std::string& text);

}  // namespace batchscope
