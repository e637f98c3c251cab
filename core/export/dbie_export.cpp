// SPDX-License-Identifier: GPL-3.0-or-later
// The Python batching engine's environment file (dbie.env): KEY=VALUE lines
// that `docker run --env-file` and shells read.

#include "common/text_out.h"
#include "export/export_text.h"

namespace batchscope::export_detail {

std::vector<ExportFile> dbie_files(const Checked& c) {
  const Options& o = c.o();
  std::string out;
  out += "# Environment for the Python batching engine (dbie.env), exported from Batchscope.\n";
  out += comment(
      "Use with: docker run --env-file dbie.env ..., or export each line before "
      "python -m dbie.");
  out += context_block(c);
  out += comment(
      "Not exact: dbie's fifo scheduler waits out MAX_WAIT_MS after the oldest request "
      "arrived even when MAX_BATCH_SIZE requests already wait; Batchscope cuts a full "
      "batch at once.");
  if (o.num_lanes > 1) {
    out += comment("Not expressible: num_lanes = " + whole(o.num_lanes) +
                   ". dbie runs one model instance on one worker thread.");
  }
  out += comment(
      "Not exact: REQUEST_TIMEOUT_S bounds the whole request (queue and model), where "
      "Batchscope's request_timeout_ms = " +
      whole(o.request_timeout_ms) + " bounds only the time in the queue.");
  if (o.strategy == StrategyKind::kAdaptive) {
    out += comment(
        "Not exact: dbie's adaptive scheduler moves its batch size by one at a time and "
        "steers by the model's batch run time, where Batchscope's steers the end-to-end "
        "p99 towards ADAPTIVE_TARGET_LATENCY_MS. ADAPTIVE_MIN_WAIT_MS=0 keeps its wait "
        "within MAX_WAIT_MS (its default floor is 5 ms).");
  }
  const ModelMetadata* m = c.in.model ? &*c.in.model : nullptr;
  const bool dims = m && m->inputs.size() == 1 && m->outputs.size() == 1 &&
                    m->inputs[0].shape.size() == 2 && m->outputs[0].shape.size() == 2 &&
                    m->inputs[0].dtype == DType::kFloat32;
  if (m && !dims) {
    out += comment("Not expressible: model " + m->name +
                   "'s inputs and outputs. dbie serves its "
                   "own stand-in, one FP32 vector of INPUT_DIM in and OUTPUT_DIM out.");
  } else if (dims) {
    out += comment(
        "Not expressible: the model itself. dbie serves its own stand-in linear "
        "model; INPUT_DIM and OUTPUT_DIM give it model " +
        m->name + "'s input and output sizes.");
  }
  out += "\n";
  out += "MAX_BATCH_SIZE=" + whole(o.max_batch_size) + "\n";
  out += "MAX_WAIT_MS=" + exact_decimal(o.max_wait_us, 3) + "\n";
  out += "QUEUE_MAX_SIZE=" + whole(o.queue_capacity) + "\n";
  out += "SCHEDULER_STRATEGY=" + std::string(strategy_name(o.strategy)) + "\n";
  std::string target;
  append_json_number(target, o.target_p99_ms);
  out += "ADAPTIVE_TARGET_LATENCY_MS=" + target + "\n";
  if (o.strategy == StrategyKind::kAdaptive) out += "ADAPTIVE_MIN_WAIT_MS=0\n";
  out += "REQUEST_TIMEOUT_S=" + exact_decimal(o.request_timeout_ms, 3) + "\n";
  out += "INFERENCE_DEVICE=" + c.device.name + "\n";
  if (dims) {
    out += "INPUT_DIM=" + whole(m->inputs[0].shape[1]) + "\n";
    out += "OUTPUT_DIM=" + whole(m->outputs[0].shape[1]) + "\n";
  }
  return {ExportFile{"dbie.env", std::move(out)}};
}

}  // namespace batchscope::export_detail
