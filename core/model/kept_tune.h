// SPDX-License-Identifier: GPL-3.0-or-later
// A tune kept in the run history: one run of kind "tune" whose summary is
// the tune's result and whose options are the winner's, and under it every
// live run the tune took (the calibrations, then the confirmations), records
// and all. The tensor tune and the generative tune keep theirs the same way.
// Thread-safety: call from one thread.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "model/history_keeping.h"
#include "model/say.h"
#include "runs/run_record.h"
#include "traffic/gen_load.h"

namespace batchscope {

class KeptTune {
 public:
  // Opens the history (nothing is kept when it is off or unfit) and keeps
  // the tune's own run: `config` (its traffic and the winner's options),
  // from `start`, its first live run's start or now, until now. `say`
  // tells where it was kept, or why not.
  KeptTune(const HistoryChoice& history, std::string label, RunConfig config, std::string context,
           TimePoint start, const std::string& result_json, Say say);

  // A tensor model's live run under the tune.
  void keep(const RunData& run, std::string label);
  // A language model's live run under the tune, as a generation run.
  void keep(const GenRun& run, RunConfig config, std::string label,
            const std::string& summary_json);

  // Writes them all and says where ("kept as run 17 (with its 6 live
  // run(s)) in PATH"), or why not. False when nothing was kept.
  bool report();

 private:
  Say say_;
  HistoryWriterPtr w_;
  uint64_t tune_ = 0;
  std::string model_, context_;
  size_t live_ = 0;
};

}  // namespace batchscope
