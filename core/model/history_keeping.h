// SPDX-License-Identifier: GPL-3.0-or-later
// The run history as this machine's runs are kept in it: which history
// (HistoryChoice, as the commands' flags and BATCHSCOPE_HISTORY give it),
// opening its writer with one clear warning and the history off when the
// file is unfit, the context a run keeps (this build, the machine,
// LibTorch and BLAS, or a Python model's class and interpreter, the model
// file's fingerprint), and keeping a whole run.
// Thread-safety: call from one thread.

#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "model/say.h"
#include "runs/run_record.h"

namespace batchscope {

class HistoryWriter;
class LocalModel;

struct HistoryChoice {
  bool off = false;
  std::string path;  // the default history unless one is named
  uint64_t request_cap = 1'000'000;
};

// The history a build keeps by default: on, at default_history_path(); off
// in a build without the history.
HistoryChoice default_history_choice();

// Owns a writer; its deleter lives where the history is built, so a build
// without the history links too.
struct HistoryWriterDelete {
  void operator()(HistoryWriter* w) const;
};
using HistoryWriterPtr = std::unique_ptr<HistoryWriter, HistoryWriterDelete>;

// The writer, or null (after one warning, "COMMAND: warning: ...; the
// history is off for this run") when the history is off or unfit. `why`,
// when given, receives the warning's reason.
HistoryWriterPtr open_history_writer(const HistoryChoice& c, const char* command, const Say& say,
                                     std::string* why = nullptr);

// What a run's context says of a Python model, which runs in worker
// processes of its own interpreter, not on Batchscope's LibTorch.
struct PythonContext {
  std::string class_name;   // the class that ran
  std::string interpreter;  // --python
  std::string version;      // its Python, "3.11.2"; empty where it could not be asked
  std::string numpy;        // its numpy, "1.24.2"; empty where it could not be imported
  bool preprocess = false;  // the class has preprocess (a pool of preprocess_workers)
  bool postprocess = false;
  // OpenMP and BLAS threads in each worker process (OMP_NUM_THREADS where
  // the environment sets it, else the cores over the lanes); 0: unknown.
  int worker_threads = 0;
};

// A Python model's context, its interpreter asked for its versions (once
// per interpreter in this process, a second or so); none for any other
// model. `lanes` and `threads` (0: the cores over the lanes) as its
// workers are started with.
std::optional<PythonContext> python_context(const LocalModel& model, uint32_t lanes,
                                            int threads = 0);

// The OpenMP and BLAS threads each of a Python model's worker processes
// gets with `lanes` lanes: OMP_NUM_THREADS where the environment sets it,
// else `threads` where positive, else the cores over the lanes.
int python_worker_threads(uint32_t lanes, int threads = 0);

// {"batchscope": {"version", "commit"}, "machine": {...}, "torch": {...},
// "model": {...}}: `model_path` is fingerprinted when it names a file. A
// Python model's has {"python": {"class", "interpreter", "version",
// "numpy", "preprocess", "postprocess", "worker_threads"}} in place of
// "torch", whose LibTorch and BLAS facts are not what ran it.
std::string run_context_json(const std::string& model_path, const std::string& device,
                             const std::optional<PythonContext>& python = std::nullopt);

// Keeps a whole run (a prediction's, after it ran) and says where:
// "  kept as run 17 in PATH". False, after saying why, when it was not kept.
bool keep_run(HistoryWriter& w, const std::string& kind, const RunData& run,
              const std::string& summary_json, const std::string& context_json, const Say& say);

// " (1000 of 1200 requests: --history-requests)" when a run of `requests`
// is kept cut at `cap`; "" otherwise.
std::string cut_text(size_t requests, uint64_t cap);

// After a tune and its live runs were queued on `w` (`tune` the tune's
// token): writes them and says where, "  kept as run 17 (with its 6 live
// run(s)) in PATH", or why not.
bool report_kept_tune(HistoryWriter& w, uint64_t tune, size_t live_runs, const Say& say);

}  // namespace batchscope
