// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Carrying tuned options to production servers and back. export_config()
// writes the options in force, for one model on one device, as the
// configuration files of Triton, TF Serving, TorchServe, Ray Serve, the
// Python engine (dbie) or Batchscope itself, and a generative model's as
// those of vLLM, Hugging Face TGI or TensorRT-LLM; import_config() reads a Triton
// config.pbtxt, a vLLM config YAML or Batchscope JSON back into options, so that tuning can begin
// from a production configuration. Where a target cannot express an option
// exactly, the file says so in a comment (where its format has comments) and
// docs/export.md has the mapping table.
// Output depends on the input alone (no clock, no locale), so it is byte for
// byte the same on every run.
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/model_metadata.h"
#include "common/options.h"
#include "common/serving_plan.h"
#include "common/status.h"

namespace batchscope {

enum class ExportFormat : uint8_t {
  kTriton,      // config.pbtxt
  kTfServing,   // batching_parameters.txt
  kTorchServe,  // config.properties and model-config.yaml
  kRayServe,    // deployment.py and serve_config.yaml
  kDbie,        // dbie.env, the Python engine's environment file
  kJson,        // batchscope.json, what `serve --config` and the window load
  // Generative models (ExportInput::lm):
  kVllm,    // vllm-config.yaml for `vllm serve --config`, and the command line
  kTgi,     // tgi.env and tgi-launch.sh for text-generation-launcher
  kTrtLlm,  // trtllm-options.yaml for trtllm-serve, and Triton's tensorrtllm config.pbtxt
  kKserve,  // inferenceservice.yaml: KServe's Hugging Face runtime with vLLM's arguments (a plan)
};

// True for the formats of generative servers (vllm, tgi, trtllm).
bool is_generative(ExportFormat format);

// "triton", "tfserving", "torchserve", "rayserve", "dbie", "json", "vllm",
// "tgi", "trtllm".
const char* export_format_name(ExportFormat format);
// For menus and messages: "Triton config.pbtxt", ...
const char* export_format_title(ExportFormat format);
// The names above; the error lists them.
Expected<ExportFormat> parse_export_format(std::string_view name);
// Every format, in the order of the enum.
std::vector<ExportFormat> export_formats();
// The formats for a tensor model, or for a generative one (batchscope.json
// serves both).
std::vector<ExportFormat> export_formats(bool generative);

// What the options were tuned under, written as comments where the format
// has comments. Free text is kept to one line.
struct TuningContext {
  std::string traffic;        // "poisson 1500 req/s"; empty: not said
  bool measured = false;      // the figures below were measured
  bool predicted = false;     // they were predicted (and not measured)
  double p50_ms = 0;          // end-to-end latency quantiles
  double p99_ms = 0;          // or, for a generative model, at `quantile`
  double throughput_rps = 0;  // completed requests per second
  // A generative model's, at `quantile`; tokens_per_s 0: not said.
  int quantile = 99;
  double ttft_ms = 0, itl_ms = 0, tokens_per_s = 0;
  // What the figures were measured (or predicted) on, in words:
  // "cuda:0 on NVIDIA H200 (0000:3b:00.0), NVIDIA driver 550.54.15"
  // (api/options_json.h's hardware_text). Empty: not said.
  std::string hardware;
};

// A Python model's handler (a model whose metadata's platform is "python"):
// the file the Triton, TorchServe and Ray Serve exports copy beside a wrapper
// that runs its class there. Plain strings: core/export knows nothing of how
// Batchscope itself runs the class.
struct PythonHandlerFile {
  std::string file_name;  // "mlp.py": the name it is copied under, without folders
  std::string source;     // its text, copied verbatim
  // The class to construct; empty: the file's one class with a predict
  // method, found when the wrapper loads, as `serve --model` finds it.
  std::string class_name;
  // The constructor's keyword arguments (--model-option KEY=VALUE), strings
  // as given, in this order.
  std::vector<std::pair<std::string, std::string>> options;
  // What the class's predict takes and gives (its `inputs` and `outputs`),
  // where ExportInput::model is what requests send and get: a class with
  // preprocess or postprocess may declare those apart (`request_inputs`,
  // `response_outputs`, BYTES among them). Unset: the same as the model's.
  std::optional<ModelMetadata> lanes;
};

// Reads the handler at `path` for ExportInput::python. The error names the
// file that could not be read.
Expected<PythonHandlerFile> read_python_handler(
    const std::string& path, const std::string& class_name,
    const std::vector<std::pair<std::string, std::string>>& options);

struct ExportInput {
  Options options;
  // A generative model: required by the generative formats (the scheduling,
  // max_num_seqs and max_num_batched_tokens options are theirs).
  std::optional<GenModelInfo> lm;
  // A language model planned for a GPU that is not here (tune
  // --model-config): the vLLM, TGI and TensorRT-LLM files name its model and
  // tensor parallelism, and kserve needs it (replicas and autoscaling).
  std::optional<ServingPlan> plan;
  // The model's name, inputs and outputs. Triton needs them for input and
  // output; without a model its export says they are missing.
  std::optional<ModelMetadata> model;
  // "cpu", "cuda" or "cuda:N": where each lane's model instance runs.
  std::string device = "cpu";
  // Batch sizes the model runs best at (for instance TensorRT profiles).
  // Batchscope's engine has no such option and does not use them; they are
  // exported as Triton's preferred_batch_size and TF Serving's
  // allowed_batch_sizes. Empty: neither is written. Each in 1..max_batch_size.
  std::vector<uint32_t> batch_sizes;
  TuningContext tuning;
  // A Python model's handler: required by triton, torchserve and rayserve
  // when the model's platform is "python", which then write a wrapper that
  // runs the class, with the file beside it (docs/export.md, "A Python
  // model"). The other formats do not use it.
  std::optional<PythonHandlerFile> python;
};

// Where `in.model` is a Python model's (platform "python"), reads its
// handler at `path` into `in.python`, with `lanes`, what its predict takes
// and gives (LocalModel::lane_metadata(): the same as `in.model` unless the
// class declares request_inputs or response_outputs; one without inputs is
// taken as unknown, the same), as the Python formats need; nothing for any
// other model.
Status add_python_handler(ExportInput& in, const std::string& path, const ModelMetadata& lanes,
                          const std::string& class_name = {},
                          const std::vector<std::pair<std::string, std::string>>& options = {});

struct ExportFile {
  // "config.pbtxt": a path relative to the export's folder, '/' between
  // folders ("mlp/1/model.py" for a Python model's Triton repository).
  std::string name;
  std::string text;
};

// The files of one format, in a fixed order: one file, or two for TorchServe
// and Ray Serve (a Python model's: the wrapper and the handler too, and for
// Triton a model repository folder). Refuses invalid options, an unknown
// device, batch sizes out of range, max_batch_size above the model's own,
// and a Python model without its handler, naming the field.
Expected<std::vector<ExportFile>> export_config(ExportFormat format, const ExportInput& input);

// Writes `files` into the folder `dir`, made (with its parents, and the
// folders the files' names hold) if missing.
// The error names the folder or file that could not be made or written.
Status write_export(const std::vector<ExportFile>& files, const std::string& dir);

struct ImportResult {
  Options options;
  ExportFormat source = ExportFormat::kJson;  // kTriton, kVllm or kJson
  // Triton only: the device its instance_group names, when it names one.
  std::optional<std::string> device;
  // Triton only: preferred_batch_size, when given.
  std::vector<uint32_t> batch_sizes;
  // A tune's result only: the traffic it was tuned under and its best's
  // figures, for the exported file's comments.
  TuningContext tuning;
  // A generative tune's result only: its model as the server needs it, the
  // file it ran (empty for a synthetic or planned model), and a planned
  // model's plan.
  std::optional<GenModelInfo> lm;
  std::string model_file;
  std::optional<ServingPlan> plan;
  // What did not carry over exactly, one sentence each.
  std::vector<std::string> notes;
};

// Reads Batchscope JSON (text that begins with '{'), a vLLM config YAML (a
// line that begins with max-num-seqs: or max-num-batched-tokens:) or a
// Triton config.pbtxt over `base`, which supplies what the file does not say. Malformed input is
// refused with the field named, and for config.pbtxt the line.
Expected<ImportResult> import_config(std::string_view text, const Options& base);

}  // namespace batchscope
