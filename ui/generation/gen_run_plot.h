// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A picture of one recorded generation run, written as a PNG: panels that
// share the time axis (seconds since GenRun::start), in windows of the run's
// length / 40 (0.1 s to 10 s):
//   1. TTFT fan: p50, p90 and p99 (ms) of the requests whose first token
//      arrived in each window;
//   2. ITL fan: p50, p90 and p99 (ms) of the token gaps ending in each window;
//   3. output tokens/s, counted as the tokens arrived at the client;
//   4. and 5., for in-process runs that recorded steps: running sequences and
//      decodes per step, and cache blocks in use against the total.
// A title carries the pattern, target and model; a headline the tokens/s and
// the TTFT/ITL p50/p99 of the summary; a third line the scheduling options.
//
// Qt: like write_run_plot() (run_plot.h): a QApplication must exist in this
// process or none at all (one is then made for the call, offscreen unless
// QT_QPA_PLATFORM says otherwise), and the call must come from its thread.
//
// Cost: proportional to tokens + steps; typically well under a second.
// Thread-safety: GUI thread only.

#include <string>

#include "common/status.h"
#include "traffic/gen_load.h"

namespace batchscope {

// Writes the picture of `run` (summarised as `s`, normally summarize_gen(run))
// to `path`, `width` x `height` pixels. Errors: kInvalidArgument for a size
// outside 200..16000 pixels, for a file that cannot be written (the message
// names the path), or when only a QCoreApplication exists.
Status write_gen_run_plot(const GenRun& run, const GenSummary& s, const std::string& path,
                          int width = 1400, int height = 1100);

}  // namespace batchscope
