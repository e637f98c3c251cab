// SPDX-License-Identifier: GPL-3.0-or-later
// TensorFlow Serving's batching_parameters.txt: a BatchingParameters message
// in protobuf text format, each value in its wrapper ({ value: N }).

#include "export/export_text.h"

namespace batchscope::export_detail {

std::vector<ExportFile> tfserving_files(const Checked& c) {
  const Options& o = c.o();
  std::string out;
  out +=
      "# TensorFlow Serving batching parameters (batching_parameters.txt), exported from "
      "Batchscope.\n";
  out +=
      "# Use with: tensorflow_model_server --enable_batching \\\n"
      "#     --batching_parameters_file=batching_parameters.txt ...\n";
  out += context_block(c);
  out += comment(
      "TF Serving serves SavedModels: these parameters apply to the TensorFlow version "
      "of the model. The device (" +
      c.device.name +
      ") is not a batching parameter; "
      "TF Serving places the model itself.");
  out += "\n";

  out += "max_batch_size { value: " + whole(o.max_batch_size) + " }\n";
  out += comment(
      "A batch is cut when max_batch_size requests wait, or when the oldest has waited "
      "this long and a thread is free: Batchscope's rule.");
  out += "batch_timeout_micros { value: " + whole(o.max_wait_us) + " }\n";

  const int64_t batches = (int64_t{o.queue_capacity} + o.max_batch_size - 1) / o.max_batch_size;
  const int64_t holds = batches * o.max_batch_size;
  if (holds == o.queue_capacity) {
    out += comment("TF Serving bounds its queue in batches: " + whole(batches) + " batches of " +
                   whole(o.max_batch_size) + " hold queue_capacity = " + whole(o.queue_capacity) +
                   " requests.");
  } else {
    out += comment(
        "Not exact: TF Serving bounds its queue in batches, not requests. "
        "queue_capacity " +
        whole(o.queue_capacity) + " / max_batch_size " + whole(o.max_batch_size) +
        ", rounded up, is " + whole(batches) + " batches, which hold up to " + whole(holds) +
        " requests, " + whole(holds - o.queue_capacity) + " more than Batchscope admits.");
  }
  out += "max_enqueued_batches { value: " + whole(batches) + " }\n";
  out += comment(
      "Not exact: one batch thread per Batchscope lane, but TF Serving's threads share "
      "one copy of the model where each Batchscope lane has its own.");
  out += "num_batch_threads { value: " + whole(o.num_lanes) + " }\n";
  if (const std::string note = padding_note(
          c, o.padding == Padding::kLongest
                 ? "TF Serving pads each batch's inputs to the longest in it too, with "
                   "pad_variable_length_inputs; it pads with zeros, whatever pad_value says."
                 : "Not exact: TF Serving pads each batch's inputs to the longest in it with "
                   "pad_variable_length_inputs, first come first batched, with zeros; it has "
                   "no buckets and no sorting by length.");
      !note.empty()) {
    out += note;
    out += "pad_variable_length_inputs: true\n";
  }

  if (c.batch_sizes.empty()) {
    out += comment(
        "allowed_batch_sizes is left out, as no batch sizes were given: TF Serving then "
        "runs batches of any size up to max_batch_size, as Batchscope does.");
  } else {
    std::vector<uint32_t> sizes = c.batch_sizes;
    std::string why =
        "Not exact: TF Serving pads each batch up to the next allowed size, and the model "
        "computes on the padding; Batchscope runs batches of any size.";
    if (sizes.back() != o.max_batch_size) {
      sizes.push_back(o.max_batch_size);
      why +=
          " The last size must equal max_batch_size, so " + whole(o.max_batch_size) + " was added.";
    }
    out += comment(why);
    for (uint32_t b : sizes) out += "allowed_batch_sizes: " + whole(b) + "\n";
  }

  out += "\n";
  out += comment("Not expressible: request_timeout_ms = " + whole(o.request_timeout_ms) +
                 ". TF Serving's batching has no queue timeout; give the client's requests a "
                 "deadline instead.");
  if (o.strategy == StrategyKind::kAdaptive) {
    out +=
        comment("Not expressible: the adaptive strategy (target p99 " + shortest(o.target_p99_ms) +
                " ms). TF Serving batches with the fixed maxima "
                "above, which the adaptive strategy only ever lowers.");
  }
  return {ExportFile{"batching_parameters.txt", std::move(out)}};
}

}  // namespace batchscope::export_detail
