// SPDX-License-Identifier: GPL-3.0-or-later
#include "python/python_handler.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/metadata_json.h"
#include "common/sidecar_path.h"
#include "python/worker_process.h"
#include "python/worker_protocol.h"

#ifndef BATCHSCOPE_PYTHON_SOURCE_DIR
#define BATCHSCOPE_PYTHON_SOURCE_DIR ""
#endif

namespace batchscope {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kWorkerFile = "batchscope_worker.py";

bool is_file(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

// What a worker's region can describe: at most 32 inputs and 32 outputs,
// each of rank 8 at most, the batch dimension included.
Status fits_a_region(const ModelMetadata& m, const std::string& origin) {
  for (const auto* specs : {&m.inputs, &m.outputs}) {
    const char* what = specs == &m.inputs ? "inputs" : "outputs";
    if (specs->size() > worker::kMaxTensors) {
      return invalid_argument(origin + ": " + std::to_string(specs->size()) + " " + what +
                              "; a Python model may have at most " +
                              std::to_string(worker::kMaxTensors));
    }
    for (const TensorSpec& t : *specs) {
      if (t.shape.size() > worker::kMaxDims) {
        return invalid_argument(origin + ": '" + t.name + "' has shape " + shape_string(t.shape) +
                                "; at most " + std::to_string(worker::kMaxDims - 1) +
                                " sizes after the batch dimension");
      }
    }
  }
  return {};
}

}  // namespace

bool is_python_file(const std::string& path) { return path.ends_with(".py"); }

std::string python_worker_path() {
  if (const char* env = std::getenv("BATCHSCOPE_PYTHON_WORKER"); env && *env) {
    return is_file(env) ? std::string(env) : std::string();
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path shipped =
        exe.parent_path().parent_path() / "share" / "batchscope" / "python" / kWorkerFile;
    if (is_file(shipped.string())) return shipped.string();
  }
  const fs::path source = fs::path(BATCHSCOPE_PYTHON_SOURCE_DIR) / kWorkerFile;
  return is_file(source.string()) ? source.string() : std::string();
}

Status check_python_spec(const PythonSpec& spec) {
  if (!is_file(spec.file)) return invalid_argument("cannot read the Python model " + spec.file);
  if (::access(spec.python.c_str(), X_OK) != 0 || !is_file(spec.python)) {
    return invalid_argument("--python " + spec.python +
                            " is not a program this user can run (the Python interpreter the"
                            " model's workers use)");
  }
  if (spec.worker_timeout_ms < 1 || spec.worker_timeout_ms > 86'400'000) {
    return invalid_argument("--worker-timeout-ms = " + std::to_string(spec.worker_timeout_ms) +
                            " is out of range; allowed 1 to 86400000");
  }
  return {};
}

namespace {

// One example value: {"hex": "..."} for BYTES, {"values": [...], "shape":
// [...]} for any other datatype; the error says what does not fit.
Expected<Tensor> example_value(const json& v, const TensorSpec& spec) {
  if (spec.dtype == DType::kBytes) {
    auto hex = v.find("hex");
    if (hex == v.end() || !hex->is_string() || hex->get_ref<const std::string&>().size() % 2) {
      return invalid_argument("is not bytes or text, as BYTES needs");
    }
    const std::string& h = hex->get_ref<const std::string&>();
    std::string bytes(h.size() / 2, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) {
      const int hi = std::isxdigit(h[2 * i]) ? std::stoi(h.substr(2 * i, 1), nullptr, 16) : -1;
      const int lo =
          std::isxdigit(h[2 * i + 1]) ? std::stoi(h.substr(2 * i + 1, 1), nullptr, 16) : -1;
      if (hi < 0 || lo < 0) return invalid_argument("has bytes that do not read");
      bytes[i] = static_cast<char>(hi * 16 + lo);
    }
    return Tensor::from_bytes(bytes);
  }
  auto values = v.find("values");
  auto shape = v.find("shape");
  if (values == v.end() || !values->is_array() || shape == v.end() || !shape->is_array()) {
    return invalid_argument("is not an array of " + std::string(dtype_name(spec.dtype)));
  }
  Shape dims;
  uint64_t count = 1;
  for (const json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 24)) {
      return invalid_argument("has a shape that does not read: " + shape->dump());
    }
    dims.push_back(d.get<int64_t>());
    count *= d.get<uint64_t>();
    if (count > (uint64_t{1} << 24)) return invalid_argument("is too large");
  }
  if (values->size() != count) return invalid_argument("has values that do not fill its shape");
  std::vector<double> flat;
  for (const json& x : *values) {
    if (!x.is_number() && !x.is_boolean()) return invalid_argument("has a value that is no number");
    flat.push_back(x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>());
  }
  Tensor t(spec.dtype, dims);
  for (size_t i = 0; i < flat.size(); ++i) {
    std::byte* at = t.data() + i * dtype_size(spec.dtype);
    switch (spec.dtype) {
      case DType::kFloat32: {
        const float f = static_cast<float>(flat[i]);
        std::memcpy(at, &f, 4);
        break;
      }
      case DType::kFloat64: std::memcpy(at, &flat[i], 8); break;
      case DType::kFloat16: {
        const uint16_t h = float_to_half(static_cast<float>(flat[i]));
        std::memcpy(at, &h, 2);
        break;
      }
      case DType::kInt64: {
        const auto n = static_cast<int64_t>(flat[i]);
        std::memcpy(at, &n, 8);
        break;
      }
      case DType::kInt32: {
        const auto n = static_cast<int32_t>(flat[i]);
        std::memcpy(at, &n, 4);
        break;
      }
      case DType::kUInt8:
      case DType::kBool: *reinterpret_cast<uint8_t*>(at) = static_cast<uint8_t>(flat[i]); break;
      case DType::kBytes: break;
    }
  }
  return t;
}

// The class's examples, each checked against what requests send.
Status read_examples(const json& j, ModelMetadata& served, const std::string& origin,
                     const std::string& cls) {
  auto it = j.find("examples");
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array()) return invalid_argument(origin + ": " + cls + ".examples is not a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& request = (*it)[i];
    const std::string where = origin + ": " + cls + ".examples[" + std::to_string(i) + "]";
    if (!request.is_object()) return invalid_argument(where + " is not a dict");
    Tensors t;
    for (const TensorSpec& spec : served.inputs) {
      auto v = request.find(spec.name);
      if (v == request.end()) return invalid_argument(where + " has no input '" + spec.name + "'");
      auto value = example_value(*v, spec);
      if (!value) return invalid_argument(where + "['" + spec.name + "'] " + value.error().message);
      t.push_back(std::move(*value));
    }
    if (Status s = check_inputs(served, t); !s) return invalid_argument(where + ": " + s.message());
    served.examples.push_back(std::move(t));
  }
  return {};
}

}  // namespace

Expected<PythonHandler> parse_handler_json(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return invalid_argument(origin + ": the worker's description is not a JSON object: '" +
                            text.substr(0, 200) + "'");
  }
  PythonHandler h;
  auto text_of = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto flag_of = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  h.class_name = text_of("class");
  h.has_preprocess = flag_of("preprocess");
  h.has_postprocess = flag_of("postprocess");
  const bool declares = j.contains("inputs") && !j["inputs"].is_null() && j.contains("outputs") &&
                        !j["outputs"].is_null();
  json sidecar = json::object();
  sidecar["name"] = text_of("name");
  sidecar["description"] = text_of("description");
  if (j.contains("max_batch_size")) sidecar["max_batch_size"] = j["max_batch_size"];
  std::string where = origin;
  if (declares) {
    sidecar["inputs"] = j["inputs"];
    sidecar["outputs"] = j["outputs"];
    auto m = parse_metadata(sidecar.dump(), origin);
    if (!m) return m.error();
    h.model = std::move(*m);
  } else {
    // A class without inputs and outputs takes the sidecar's, as a TorchScript model does.
    where = sidecar_path(origin);
    auto m = load_metadata(where);
    if (!m) {
      return invalid_argument(origin + ": class " + h.class_name +
                              " declares no inputs and outputs, and its sidecar cannot be read (" +
                              m.error().message +
                              "); declare them in the class or make one with: "
                              "batchscope describe --model " +
                              origin + " --input NAME:DTYPE:SHAPE");
    }
    h.model = std::move(*m);
    h.model.name = text_of("name");
  }
  h.model.platform = "python";
  for (const TensorSpec& t : h.model.inputs) {
    if (t.dtype == DType::kBytes) {
      return invalid_argument(origin + ": " + h.class_name + "'s input '" + t.name +
                              "' is BYTES; predict takes arrays: declare the bytes in "
                              "request_inputs and turn them into arrays in preprocess");
    }
  }
  if (Status s = fits_a_region(h.model, where); !s) return s.error();
  // What requests send and get.
  h.metadata = h.model;
  for (const char* key : {"request_inputs", "response_outputs"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    json served = sidecar;  // the list read as both, to check it as a sidecar's
    served["inputs"] = *it;
    served["outputs"] = *it;
    auto m = parse_metadata(served.dump(), origin);
    if (!m) return m.error();
    if (key == std::string("request_inputs")) {
      h.metadata.inputs = std::move(m->inputs);
    } else {
      h.metadata.outputs = std::move(m->outputs);
    }
  }
  if (Status s = fits_a_region(h.metadata, origin); !s) return s.error();
  if (Status s = read_examples(j, h.metadata, origin, h.class_name); !s) return s.error();
  return h;
}

Expected<PythonHandler> describe_python(const PythonSpec& spec) {
  if (Status s = check_python_spec(spec); !s) return s.error();
  const std::string worker = spec.worker_script.empty() ? python_worker_path() : spec.worker_script;
  if (worker.empty()) {
    return invalid_argument(
        "cannot find Batchscope's Python worker module (share/batchscope/python/" +
        std::string(kWorkerFile) + "); set BATCHSCOPE_PYTHON_WORKER to its path");
  }
  SpawnRequest r;
  r.argv = {spec.python, "-u", "-B", worker, "describe", spec.file};  // -B: no .pyc beside it
  if (!spec.class_name.empty()) {
    r.argv.push_back("--class");
    r.argv.push_back(spec.class_name);
  }
  r.separate_stdout = true;
  auto child = ChildProcess::spawn(r);
  if (!child) return child.error();
  const std::string out = (*child)->read_all(spec.start_timeout_ms);
  const ProcessEnd end = (*child)->end().value_or(ProcessEnd{});
  if (!(*child)->end() || end.status != 0) {
    std::string why = (*child)->tail(30);
    if (why.empty()) why = "it " + end.text();
    return invalid_argument("cannot describe the Python model " + spec.file + ": " + why);
  }
  return parse_handler_json(out, spec.file);
}

}  // namespace batchscope
