// SPDX-License-Identifier: GPL-3.0-or-later
// Triton Inference Server's config.pbtxt for the PyTorch (LibTorch) backend,
// and for the Python backend (python_triton_export.cpp writes its model.py).

#include "common/text_out.h"
#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

const char* triton_type(DType t) {
  switch (t) {
    case DType::kFloat32: return "TYPE_FP32";
    case DType::kFloat16: return "TYPE_FP16";
    case DType::kFloat64: return "TYPE_FP64";
    case DType::kInt64: return "TYPE_INT64";
    case DType::kInt32: return "TYPE_INT32";
    case DType::kUInt8: return "TYPE_UINT8";
    case DType::kBool: return "TYPE_BOOL";
    case DType::kBytes: return "TYPE_STRING";  // Triton's config name for BYTES
  }
  return "TYPE_INVALID";
}

// `ragged`: mark inputs that vary in length allow_ragged_batch, for a
// backend that pads them itself.
void tensors(std::string& out, const char* field, const std::vector<TensorSpec>& specs,
             bool ragged = false) {
  out += std::string(field) + " [\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    out += "  {\n    name: " + pbtxt_string(t.name) + "\n    data_type: " + triton_type(t.dtype) +
           "\n    dims: [ ";
    const Shape item = t.item_shape();
    for (size_t d = 0; d < item.size(); ++d) out += (d ? ", " : "") + whole(item[d]);
    out += item.empty() ? "1 ]\n" : " ]\n";
    if (ragged && t.variable()) out += "    allow_ragged_batch: true\n";
    if (item.empty()) {
      out += comment(
          "A scalar per request: Triton's dims cannot be empty, so dims [ 1 ] and an "
          "empty reshape give the model a scalar.",
          "    # ");
      out += "    reshape: { shape: [ ] }\n";
    }
    out += i + 1 < specs.size() ? "  },\n" : "  }\n";
  }
  out += "]\n";
}

// The options Triton has no field for, as the JSON that `batchscope import`
// reads back from this comment line.
std::string carried_json(const Options& o) {
  std::string s = "{\"strategy\":";
  append_json_string(s, strategy_name(o.strategy));
  s += ",\"target_p99_ms\":";
  append_json_number(s, o.target_p99_ms);
  if (o.padding != Padding::kLongest) {
    s += ",\"padding\":";
    append_json_string(s, padding_name(o.padding));
    s += ",\"length_buckets\":[" + length_buckets_text(o) + "]";
  }
  return s + "}";
}

}  // namespace

std::string triton_config(const Checked& c, bool python) {
  const Options& o = c.o();
  std::string out;
  const std::string name = model_name(c.in, "");
  out +=
      "# Triton Inference Server model configuration (config.pbtxt), exported from Batchscope.\n";
  if (python) {
    out += comment("The folder " + name + "/ is a model repository entry: place it at " +
                   "MODEL_REPOSITORY/" + name + "/, with 1/model.py (which runs the class) and " +
                   "1/" + c.in.python->file_name + " (the handler, as given) in it.");
  } else if (!name.empty()) {
    out += comment("Place it at MODEL_REPOSITORY/" + name + "/config.pbtxt, with the " +
                   "TorchScript file at MODEL_REPOSITORY/" + name + "/1/model.pt.");
  }
  out += context_block(c);
  out += comment(
      "strategy and target_p99_ms (and a padding policy) have no Triton field; "
      "`batchscope import` reads them back from the next line.");
  out += "# batchscope-options: " + carried_json(o) + "\n";
  if (o.strategy == StrategyKind::kAdaptive) {
    out += comment("Not exact: the adaptive strategy (target p99 " + shortest(o.target_p99_ms) +
                   " ms) has no Triton equivalent. Triton batches with the fixed maxima below, "
                   "which the adaptive strategy only ever lowers; expect larger batches and "
                   "longer waits than Batchscope's adaptive runs.");
  }
  out += "\n";
  if (!name.empty()) out += "name: " + pbtxt_string(name) + "\n";
  out += python ? "backend: \"python\"\n" : "platform: \"pytorch_libtorch\"\n";
  out += "max_batch_size: " + whole(o.max_batch_size) + "\n";
  if (python) {
    out += comment(
        "The class's inputs and outputs, by name; model.py reads and answers them by these "
        "names. dims leave out the batch dimension.");
    tensors(out, "input", c.in.model->inputs, true);
    tensors(out, "output", c.in.model->outputs);
    out += padding_note(
        c,
        "allow_ragged_batch lets Triton put requests of different lengths in one batch; "
        "model.py pads them to the longest with each input's pad value, runs one predict, "
        "and cuts each output's varying dimension back to its request's length, as "
        "Batchscope's runner does (longest, without buckets).");
  } else if (c.in.model) {
    out += comment(
        "Input names must match the arguments of the model's forward(); outputs are "
        "matched by their order here. dims leave out the batch dimension.");
    tensors(out, "input", c.in.model->inputs);
    tensors(out, "output", c.in.model->outputs);
    out += padding_note(
        c,
        "Not expressible: Triton's dynamic batcher puts only requests of equal shape in "
        "one batch (dims -1 above) and never pads. Send requests padded to a few lengths "
        "(the length buckets are one choice), or set allow_ragged_batch: true on the inputs "
        "with a batch_input of each request's length and a model that takes the requests "
        "concatenated.");
  } else {
    out += comment(
        "input and output are missing: no model was given (batchscope export --model "
        "PATH fills them in). Triton's PyTorch backend cannot find them by itself; add "
        "them before loading this configuration.");
  }
  out += comment(python ? "One model instance per Batchscope lane, each a Python process with "
                          "its own instance of the class, as Batchscope's lanes are."
                        : "One model instance per Batchscope lane, each with its own copy of the "
                          "model, as Batchscope's lanes are.");
  out += "instance_group [\n  {\n    count: " + whole(o.num_lanes) + "\n";
  if (c.device.gpu) {
    out += "    kind: KIND_GPU\n    gpus: [ " + whole(c.device.index) + " ]\n";
  } else {
    out += "    kind: KIND_CPU\n";
  }
  out += "  }\n]\n";
  out += "dynamic_batching {\n";
  const bool preferred = !c.batch_sizes.empty() &&
                         !(c.batch_sizes.size() == 1 && c.batch_sizes[0] == o.max_batch_size);
  if (preferred) {
    out += comment(
        "Not exact: Triton sends a batch as soon as one of these sizes can be formed, "
        "without waiting out max_queue_delay_microseconds; Batchscope's engine has no "
        "such rule, so batches here can be smaller and waits shorter than measured.",
        "  # ");
    out += "  preferred_batch_size: [ ";
    for (size_t i = 0; i < c.batch_sizes.size(); ++i) {
      out += (i ? ", " : "") + whole(c.batch_sizes[i]);
    }
    out += " ]\n";
  } else if (!c.batch_sizes.empty()) {
    out += comment(
        "preferred_batch_size is left out: the only size given is max_batch_size, "
        "which Triton fills first anyway.",
        "  # ");
  }
  out += comment("Triton waits for more requests only while no batch of max_batch_size" +
                     std::string(preferred ? " or of a preferred size" : "") +
                     " can be formed, and no longer than this after the oldest request arrived: " +
                     (preferred ? "with preferred sizes this differs from Batchscope's rule."
                                : "Batchscope's rule, with no preferred size given."),
                 "  # ");
  out += "  max_queue_delay_microseconds: " + whole(o.max_wait_us) + "\n";
  out += "  default_queue_policy {\n";
  out += comment(
      "Triton counts requests and Batchscope rows: the same when each request carries "
      "one row.",
      "    # ");
  out += "    max_queue_size: " + whole(o.queue_capacity) + "\n";
  out += "    default_timeout_microseconds: " + whole(o.request_timeout_ms * 1000) + "\n";
  out += "    timeout_action: REJECT\n";
  out += "  }\n}\n";
  return out;
}

std::vector<ExportFile> triton_files(const Checked& c) {
  return {ExportFile{"config.pbtxt", triton_config(c, false)}};
}

}  // namespace batchscope::export_detail
