// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The run history as the commands use it: the flags that choose it
// (--history FILE, --no-history, --history-requests N; BATCHSCOPE_HISTORY),
// opening it with one clear warning and the history off when the file is
// unfit, and the context a run keeps (machine, LibTorch and BLAS, model file).
// Thread-safety: call from one thread.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "runs/run_record.h"

namespace batchscope {

class HistoryWriter;
class History;

struct HistoryChoice {
  bool off = false;
  std::string path;  // the default unless --history names one
  uint64_t request_cap = 1'000'000;
};

// Reads and removes the history flags; errors quote the value.
Expected<HistoryChoice> take_history_flags(std::map<std::string, std::string>& flags);

// Owns a writer; its deleter lives where the history is built, so a build
// without the history links too.
struct HistoryWriterDelete {
  void operator()(HistoryWriter* w) const;
};
using HistoryWriterPtr = std::unique_ptr<HistoryWriter, HistoryWriterDelete>;

// The writer, or null (after one warning on stderr, "COMMAND: warning: ...;
// the history is off for this run") when the history is off or unfit.
// `why`, when given, receives the warning's reason.
HistoryWriterPtr open_history_writer(const HistoryChoice& c, const char* command,
                                     std::string* why = nullptr);

// {"batchscope": {"version", "commit"}, "machine": {...}, "torch": {...},
// "model": {...}}: `model_path` is fingerprinted when it names a file.
std::string run_context_json(const std::string& model_path, const std::string& device);

// Keeps a whole run (a bench's, after it ran) and says where:
// "  kept as run 17 in PATH". False, after saying why, when it was not kept.
bool keep_run(HistoryWriter& w, const std::string& kind, const RunData& run,
              const std::string& summary_json, const std::string& context_json);

// After a tune and its live runs were queued on `w` (`tune` the tune's
// token): writes them and says where, "  kept as run 17 (with its 6 live
// run(s)) in PATH", or why not.
bool report_kept_tune(HistoryWriter& w, uint64_t tune, size_t live_runs);

// The help text for the history flags.
std::string history_flags_help();

}  // namespace batchscope
