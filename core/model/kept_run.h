// SPDX-License-Identifier: GPL-3.0-or-later
// A bench's run kept in the history as it goes: begun as its traffic starts,
// what was answered (and, in process, the batches and steps that ran) handed
// to the history writer every half second, finished at the end. A process
// killed mid-run leaves the run unfinished with all but about its last
// second; a run ended early by SIGINT or SIGTERM is finished, its summary
// noting who stopped it.
// Thread-safety: the progress functions may be called from the load's
// feeder thread while the command's thread waits on the load; finish() from
// the command's thread after the load has returned.

#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "model/history_keeping.h"
#include "model/say.h"
#include "runs/run_record.h"
#include "traffic/gen_load.h"
#include "traffic/load_driver.h"

namespace batchscope {

class KeptRun {
 public:
  // `w` null: nothing is kept (the history is off). `say` tells where the
  // run was kept, or why not.
  KeptRun(HistoryWriter* w, std::string kind, std::string label, RunConfig config,
          std::string context, Say say);

  // What run_load / run_inproc hand over; null when nothing is kept.
  ProgressFn progress();
  // What run_gen_load hands over; `steps`, when given, is asked for the
  // engine's steps since its last call each time.
  GenProgressFn gen_progress(std::function<std::vector<StepRecord>()> steps = {});

  // Appends what was not handed over yet, finishes the run with the summary
  // (and `stopped`, when not empty, as its note) lasting `duration_s`, and
  // says where it was kept. False, after saying why, when it was not kept.
  bool finish(const RunData& run, const std::string& summary_json, double duration_s,
              const std::string& stopped);
  // The same for a generation run; `steps` are those not handed over yet.
  bool finish_generation(const GenRun& run, const std::string& summary_json, double duration_s,
                         const std::string& stopped);

 private:
  void begin(TimePoint start);
  bool report(size_t requests);

  HistoryWriter* w_;
  std::string kind_, label_, context_;
  Say say_;
  RunConfig config_;
  std::mutex mu_;
  bool begun_ = false;
  uint64_t token_ = 0;
  std::vector<bool> handed_;  // by request index
  size_t batches_handed_ = 0, depth_handed_ = 0;
};

}  // namespace batchscope
