// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the format writers share: the checked export input, exact and
// locale-free numbers, and comment paragraphs. Internal to core/export.
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "export/export_config.h"

namespace batchscope::export_detail {

struct Device {
  bool gpu = false;
  int index = 0;     // the GPU's index ("cuda" alone is LibTorch's cuda:0)
  std::string name;  // "cpu" or "cuda:N"
};
// "cpu", "cuda", "cuda:N"; anything else is refused naming the device.
Expected<Device> parse_device(std::string_view text);

// An export input that passed its checks.
struct Checked {
  const ExportInput& in;
  Device device;
  std::vector<uint32_t> batch_sizes;  // sorted, without duplicates
  const Options& o() const { return in.options; }
};
Expected<Checked> check_input(const ExportInput& in);

// The model's name, or `fallback` without a model.
std::string model_name(const ExportInput& in, std::string_view fallback);

// Numbers written with std::to_chars: the same under every locale.
std::string fixed(double v, int decimals);
// The shortest form that reads back to the same value: 7.5, 50, 0.01.
std::string shortest(double v);
std::string whole(int64_t v);
// `value` / 10^digits written exactly, trailing zeros dropped: (2500, 3)
// gives "2.5", (2000, 3) gives "2", (2000, 6) gives "0.002".
std::string exact_decimal(int64_t value, int digits);
// Microseconds to whole milliseconds, to nearest (halves up).
int64_t nearest_ms(int64_t us);
// Milliseconds to whole seconds, rounded up, at least 1.
int64_t ceil_seconds(int64_t ms);

// `text` word-wrapped to lines of at most `width` characters, each starting
// with `marker` ("# ", "  # "). A word longer than the line stays whole.
std::string comment(std::string_view text, std::string_view marker = "# ", size_t width = 90);

// The comment paragraphs every export opens with: the options in force, the
// model and device, the traffic and measured figures when known.
std::vector<std::string> context_paragraphs(const Checked& c);
// The paragraphs above as "# " comments between two "#" lines.
std::string context_block(const Checked& c, std::string_view marker = "# ");

// For a model whose inputs vary in length: which inputs, the padding policy
// in force, then `server`'s own words on what it does with such requests;
// empty for a model without variable dimensions.
std::string padding_note(const Checked& c, std::string_view server, std::string_view marker = "# ");

// Free text kept to one line of printable characters.
std::string one_line(std::string_view s);
// A YAML scalar: `s` as it is when plain ([A-Za-z0-9._/@+-], not empty),
// else double-quoted with \\ \" and control characters escaped.
std::string yaml_scalar(std::string_view s);
// A POSIX shell word for `s`: single-quoted, each ' written '\''.
std::string shell_word(std::string_view s);

// A protobuf text-format string literal, quotes included.
std::string pbtxt_string(std::string_view s);

std::vector<ExportFile> triton_files(const Checked& c);
std::vector<ExportFile> tfserving_files(const Checked& c);
std::vector<ExportFile> torchserve_files(const Checked& c);
std::vector<ExportFile> rayserve_files(const Checked& c);

// What the TorchScript and Python exports of one server share.
// Triton's config.pbtxt: the PyTorch backend's, or with `python` the Python
// backend's (backend "python", ragged inputs where they vary).
std::string triton_config(const Checked& c, bool python);
// TorchServe's config.properties and model-config.yaml, worded for the
// archive they go with.
struct TorchServeWording {
  std::string archive;  // config.properties: how MODEL_STORE/NAME.mar is made
  std::string package;  // model-config.yaml: the torch-model-archiver line
  std::string padding;  // what the handler does with inputs of varying length
};
std::vector<ExportFile> torchserve_config_files(const Checked& c, const TorchServeWording& w);
// Ray Serve: the comments deployment.py opens with after the context (its
// replicas, queue and wait), the decorator line @serve.deployment(...), and
// serve_config.yaml for the files `holding` names ("deployment.py").
std::string rayserve_notes(const Checked& c);
std::string rayserve_decorator(const Checked& c);
std::string rayserve_config_yaml(const Checked& c, std::string_view holding);

// A Python model's wrappers (python_*_export.cpp): each refuses an input
// without its handler, naming it.
Expected<std::vector<ExportFile>> triton_python_files(const Checked& c);
Expected<std::vector<ExportFile>> torchserve_python_files(const Checked& c);
Expected<std::vector<ExportFile>> rayserve_python_files(const Checked& c);
std::vector<ExportFile> dbie_files(const Checked& c);
std::vector<ExportFile> vllm_files(const Checked& c);
std::vector<ExportFile> tgi_files(const Checked& c);
std::vector<ExportFile> trtllm_files(const Checked& c);
// Refuses an input without a plan.
Expected<std::vector<ExportFile>> kserve_files(const Checked& c);

Expected<ImportResult> import_triton(std::string_view text, const Options& base);
// A line that begins with max-num-seqs: or max-num-batched-tokens: (or their
// underscore forms).
bool looks_like_vllm(std::string_view text);
Expected<ImportResult> import_vllm(std::string_view text, const Options& base);

}  // namespace batchscope::export_detail
