// SPDX-License-Identifier: GPL-3.0-or-later
// TorchServe: the model's entry in config.properties (the `models` JSON) and
// the same values as the model archive's model-config.yaml.

#include "common/text_out.h"
#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

// The comments both files carry about values TorchServe words differently.
std::string lossy_notes(const Checked& c, bool has_queue_cap, const std::string& padding) {
  const Options& o = c.o();
  std::string out;
  if (o.max_wait_us % 1000 != 0) {
    out += comment("Not exact: maxBatchDelay is whole milliseconds; max_wait_us = " +
                   whole(o.max_wait_us) + " (" + exact_decimal(o.max_wait_us, 3) +
                   " ms) is written to the nearest, " + whole(nearest_ms(o.max_wait_us)) + " ms.");
  }
  out += comment(
      "Not exact: TorchServe starts maxBatchDelay when a worker takes the first request "
      "of a batch, not when that request arrived as Batchscope does; under load a "
      "request can wait longer than this.");
  const int64_t seconds = ceil_seconds(o.request_timeout_ms);
  out += comment(
      "Not exact: responseTimeout bounds how long a worker may take to answer a batch "
      "(TorchServe restarts the worker after it), not how long a request may wait in "
      "the queue; request_timeout_ms = " +
      whole(o.request_timeout_ms) + " is written " +
      (o.request_timeout_ms == seconds * 1000 ? "as " : "rounded up to ") + whole(seconds) +
      " s. TorchServe has no queue timeout.");
  if (!has_queue_cap) {
    out += comment("Not expressible here: queue_capacity = " + whole(o.queue_capacity) +
                   ". TorchServe's queue size is the server-wide job_queue_size (see "
                   "config.properties).");
  }
  if (o.strategy == StrategyKind::kAdaptive) {
    out +=
        comment("Not expressible: the adaptive strategy (target p99 " + shortest(o.target_p99_ms) +
                " ms). TorchServe batches with the fixed maxima, "
                "which the adaptive strategy only ever lowers.");
  }
  out += padding_note(c, padding);
  return out;
}

}  // namespace

std::vector<ExportFile> torchserve_files(const Checked& c) {
  const std::string name = model_name(c.in, "model");
  TorchServeWording w;
  w.archive = "MODEL_STORE/" + name +
              ".mar is made by torch-model-archiver --version 1.0 "
              "with a handler that takes a list of requests. model-config.yaml carries the "
              "same per-model values inside the archive.";
  w.package = "# Package it with: torch-model-archiver --model-name " + name +
              " --version 1.0 --config-file model-config.yaml ...\n";
  w.padding =
      "TorchServe hands the handler the batch's requests as they came: the "
      "handler must pad them to the longest (and cut each output back), as "
      "Batchscope's runner does. It batches first come first served, with no "
      "buckets and no sorting by length.";
  return torchserve_config_files(c, w);
}

std::vector<ExportFile> torchserve_config_files(const Checked& c, const TorchServeWording& w) {
  const Options& o = c.o();
  const std::string name = model_name(c.in, "model");
  const std::string delay = whole(nearest_ms(o.max_wait_us));
  const std::string timeout = whole(ceil_seconds(o.request_timeout_ms));
  const std::string workers = whole(o.num_lanes);

  std::string props;
  props += "# TorchServe configuration (config.properties), exported from Batchscope.\n";
  props +=
      "# Start with: torchserve --start --model-store MODEL_STORE --ts-config "
      "config.properties\n";
  props += comment(w.archive);
  props += context_block(c);
  props += lossy_notes(c, true, w.padding);
  props += comment(
      "One worker per Batchscope lane, each with its own copy of the model, as "
      "Batchscope's lanes are; minWorkers = maxWorkers keeps the count fixed.");
  if (c.device.gpu) {
    props += comment(
        "TorchServe spreads workers over the GPUs it sees; model-config.yaml's "
        "deviceIds pins them to GPU " +
        whole(c.device.index) + ".");
  } else {
    props += comment("number_of_gpu=0 keeps every worker on the CPU.");
  }
  props += "\n";
  if (!c.device.gpu) props += "number_of_gpu=0\n";
  props += comment(
      "job_queue_size is server-wide: every model this TorchServe serves gets a queue "
      "of this many requests.");
  props += "job_queue_size=" + whole(o.queue_capacity) + "\n";
  props += "load_models=" + name + ".mar\n";
  std::string key;
  append_json_string(key, name);
  std::string mar;
  append_json_string(mar, name + ".mar");
  props += "models={\\\n";
  props += "  " + key + ": {\\\n";
  props += "    \"1.0\": {\\\n";
  props += "      \"defaultVersion\": true,\\\n";
  props += "      \"marName\": " + mar + ",\\\n";
  props += "      \"minWorkers\": " + workers + ",\\\n";
  props += "      \"maxWorkers\": " + workers + ",\\\n";
  props += "      \"batchSize\": " + whole(o.max_batch_size) + ",\\\n";
  props += "      \"maxBatchDelay\": " + delay + ",\\\n";
  props += "      \"responseTimeout\": " + timeout + "\\\n";
  props += "    }\\\n";
  props += "  }\\\n";
  props += "}\n";

  std::string yaml;
  yaml += "# TorchServe model configuration (model-config.yaml), exported from Batchscope.\n";
  yaml += w.package;
  yaml += comment("config.properties carries the same values, and the queue size.");
  yaml += context_block(c);
  yaml += lossy_notes(c, false, w.padding);
  yaml += "\n";
  yaml += "minWorkers: " + workers + "\n";
  yaml += "maxWorkers: " + workers + "\n";
  yaml += "batchSize: " + whole(o.max_batch_size) + "\n";
  yaml += "maxBatchDelay: " + delay + "\n";
  yaml += "responseTimeout: " + timeout + "\n";
  if (c.device.gpu) {
    yaml += "deviceType: gpu\n";
    yaml += "deviceIds: [" + whole(c.device.index) + "]\n";
  } else {
    yaml += "deviceType: cpu\n";
  }
  return {ExportFile{"config.properties", std::move(props)},
          ExportFile{"model-config.yaml", std::move(yaml)}};
}

}  // namespace batchscope::export_detail
