// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/export_config.h"

#include "api/options_json.h"
#include "export/export_text.h"

#include <filesystem>
#include <fstream>

namespace batchscope {

namespace {

struct FormatInfo {
  ExportFormat format;
  const char* name;
  const char* title;
};

constexpr FormatInfo kFormats[] = {
    {ExportFormat::kTriton, "triton", "Triton config.pbtxt"},
    {ExportFormat::kTfServing, "tfserving", "TF Serving batching_parameters.txt"},
    {ExportFormat::kTorchServe, "torchserve", "TorchServe config.properties and model-config.yaml"},
    {ExportFormat::kRayServe, "rayserve", "Ray Serve deployment.py and serve_config.yaml"},
    {ExportFormat::kDbie, "dbie", "Python engine (dbie) environment file"},
    {ExportFormat::kJson, "json", "Batchscope JSON"},
    {ExportFormat::kVllm, "vllm", "vLLM serve config.yaml"},
    {ExportFormat::kTgi, "tgi", "Hugging Face TGI launcher arguments"},
    {ExportFormat::kTrtLlm, "trtllm", "TensorRT-LLM trtllm-serve options and Triton config.pbtxt"},
    {ExportFormat::kKserve, "kserve", "KServe InferenceService (Hugging Face runtime, vLLM)"},
};

const FormatInfo& info(ExportFormat f) {
  for (const FormatInfo& i : kFormats) {
    if (i.format == f) return i;
  }
  return kFormats[0];
}

// One option a line, so that the file reads well and diffs well.
std::string json_file(const Options& o) {
  std::string out;
  bool in_array = false;  // [32, 64, 128] stays on its line
  for (char c : options_to_json(o)) {
    if (c == '[' || c == ']') in_array = c == '[';
    if (c == '{')
      out += "{\n  ";
    else if (c == ',')
      out += in_array ? ", " : ",\n  ";
    else if (c == '}')
      out += "\n}\n";
    else if (c == ':')
      out += ": ";
    else
      out += c;
  }
  return out;
}

}  // namespace

const char* export_format_name(ExportFormat format) { return info(format).name; }

const char* export_format_title(ExportFormat format) { return info(format).title; }

Expected<ExportFormat> parse_export_format(std::string_view name) {
  std::string known;
  for (const FormatInfo& i : kFormats) {
    if (name == i.name) return i.format;
    known += (known.empty() ? "" : ", ") + std::string(i.name);
  }
  return invalid_argument("format '" + std::string(name) + "' is unknown; known: " + known);
}

std::vector<ExportFormat> export_formats() {
  std::vector<ExportFormat> out;
  for (const FormatInfo& i : kFormats) out.push_back(i.format);
  return out;
}

bool is_generative(ExportFormat f) {
  return f == ExportFormat::kVllm || f == ExportFormat::kTgi || f == ExportFormat::kTrtLlm ||
         f == ExportFormat::kKserve;
}

std::vector<ExportFormat> export_formats(bool generative) {
  std::vector<ExportFormat> out;
  for (const FormatInfo& i : kFormats) {
    if (i.format == ExportFormat::kJson || is_generative(i.format) == generative) {
      out.push_back(i.format);
    }
  }
  return out;
}

Expected<std::vector<ExportFile>> export_config(ExportFormat format, const ExportInput& input) {
  auto checked = export_detail::check_input(input);
  if (!checked) return checked.error();
  const export_detail::Checked& c = *checked;
  if (is_generative(format) && !input.lm) {
    return invalid_argument(std::string("the ") + info(format).name +
                            " export is for a generative model: give --config with a generative "
                            "tune's result, --model with a generative sidecar "
                            "(models/tiny_lm.pt) or --synthetic-lm");
  }
  // A Python model's class runs on Triton, TorchServe and Ray Serve through
  // a wrapper; the other formats carry only the batching options.
  const bool python = input.model && input.model->platform == "python";
  if (python && format == ExportFormat::kTriton) return export_detail::triton_python_files(c);
  if (python && format == ExportFormat::kTorchServe) {
    return export_detail::torchserve_python_files(c);
  }
  if (python && format == ExportFormat::kRayServe) return export_detail::rayserve_python_files(c);
  switch (format) {
    case ExportFormat::kTriton: return export_detail::triton_files(c);
    case ExportFormat::kTfServing: return export_detail::tfserving_files(c);
    case ExportFormat::kTorchServe: return export_detail::torchserve_files(c);
    case ExportFormat::kRayServe: return export_detail::rayserve_files(c);
    case ExportFormat::kDbie: return export_detail::dbie_files(c);
    case ExportFormat::kJson:
      return std::vector<ExportFile>{ExportFile{"batchscope.json", json_file(c.o())}};
    case ExportFormat::kVllm: return export_detail::vllm_files(c);
    case ExportFormat::kTgi: return export_detail::tgi_files(c);
    case ExportFormat::kTrtLlm: return export_detail::trtllm_files(c);
    case ExportFormat::kKserve: return export_detail::kserve_files(c);
  }
  return invalid_argument("export format " + std::to_string(static_cast<int>(format)) +
                          " is unknown");
}

Status write_export(const std::vector<ExportFile>& files, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return invalid_argument("cannot make the folder " + dir + (ec ? ": " + ec.message() : ""));
  for (const ExportFile& f : files) {
    const fs::path path = fs::path(dir) / f.name;
    if (path.has_parent_path() && path.parent_path() != fs::path(dir)) {
      fs::create_directories(path.parent_path(), ec);
      if (ec) return invalid_argument("cannot make the folder " + path.parent_path().string());
    }
    std::ofstream out(path, std::ios::binary);
    out << f.text;
    out.close();
    if (!out) return invalid_argument("cannot write " + path.string());
  }
  return {};
}

Expected<ImportResult> import_config(std::string_view text, const Options& base) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte order mark
  size_t first = 0;
  while (first < text.size() && (text[first] == ' ' || text[first] == '\t' || text[first] == '\n' ||
                                 text[first] == '\r')) {
    ++first;
  }
  if (first < text.size() && text[first] == '{') {
    auto o = options_from_json(text, base);
    if (!o) return invalid_argument("Batchscope JSON: " + o.error().message);
    ImportResult r;
    r.options = *o;
    r.source = ExportFormat::kJson;
    if (auto t = tune_outcome_from_json(text)) {
      TuningContext& c = r.tuning;
      c.traffic = t->traffic;
      c.measured = t->measured;
      c.predicted = !t->measured;
      c.p50_ms = t->p50_ms;
      c.p99_ms = t->p99_ms;
      c.throughput_rps = t->throughput_rps;
      c.quantile = t->quantile;
      c.ttft_ms = t->ttft_ms;
      c.itl_ms = t->itl_ms;
      c.tokens_per_s = t->tokens_per_s;
      c.hardware = t->hardware;
      r.lm = t->lm;
      r.model_file = t->model_file;
      r.plan = t->plan;
    }
    return r;
  }
  if (first == text.size()) {
    return invalid_argument(
        "the file is empty; expected Batchscope JSON, a Triton config.pbtxt or a vLLM config YAML");
  }
  if (export_detail::looks_like_vllm(text)) return export_detail::import_vllm(text, base);
  return export_detail::import_triton(text, base);
}

}  // namespace batchscope
