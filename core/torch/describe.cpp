// SPDX-License-Identifier: GPL-3.0-or-later
// Torch first: LibTorch uses the identifier `slots`, which Qt defines as a
// macro (this target never includes Qt).
#include <torch/script.h>

#include "torch/describe.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "common/metadata_json.h"
#include "torch/scalar_types.h"
#include "torch/torch_threads.h"

namespace batchscope {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string argument_list(const std::vector<ForwardArgument>& args) {
  std::string out;
  for (const ForwardArgument& a : args) {
    out += (out.empty() ? "" : ", ") + a.name + ": " + a.type;
    if (a.has_default) out += " = ...";
  }
  return "forward(" + out + ")";
}

std::vector<ForwardArgument> arguments_of(torch::jit::Module& module) {
  const auto& schema = module.get_method("forward").function().getSchema();
  std::vector<ForwardArgument> out;
  const auto& args = schema.arguments();
  for (size_t i = 1; i < args.size(); ++i) {  // 0 is self
    out.push_back({args[i].name(), args[i].type()->str(), args[i].default_value().has_value()});
  }
  return out;
}

struct Observed {
  std::string name;
  at::Tensor tensor;
};

// The forward result as named tensors; throws std::runtime_error otherwise.
std::vector<Observed> outputs_of(const c10::IValue& v) {
  std::vector<Observed> out;
  const auto numbered = [&out](const std::vector<at::Tensor>& ts) {
    for (size_t i = 0; i < ts.size(); ++i) out.push_back({"output_" + std::to_string(i), ts[i]});
  };
  if (v.isTensor()) {
    out.push_back({"output", v.toTensor()});
  } else if (v.isTuple() || v.isTensorList()) {
    std::vector<at::Tensor> ts;
    if (v.isTensorList()) {
      ts = v.toTensorVector();
    } else {
      for (const auto& e : v.toTupleRef().elements()) {
        if (!e.isTensor())
          throw std::runtime_error("the model returned a tuple holding " + e.tagKind() +
                                   "; Batchscope serves tensors, a tuple or a dict of them");
        ts.push_back(e.toTensor());
      }
    }
    numbered(ts);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) {
      if (!kv.key().isString() || !kv.value().isTensor())
        throw std::runtime_error("the model returned a dict that is not str -> Tensor");
      out.push_back({kv.key().toStringRef(), kv.value().toTensor()});
    }
  } else {
    throw std::runtime_error("the model returned " + v.tagKind() +
                             "; Batchscope serves a tensor, a tuple or a dict of tensors");
  }
  if (out.empty()) throw std::runtime_error("the model returned no tensors");
  return out;
}

// TorchScript puts the error itself last, under its traces: that line
// first, then the traces.
std::string last_line_first(const std::string& message) {
  size_t end = message.find_last_not_of("\n ");
  if (end == std::string::npos) return message;
  const size_t start = message.rfind('\n', end);
  if (start == std::string::npos) return message;
  return message.substr(start + 1, end - start) + "\n" + message.substr(0, start);
}

}  // namespace

Expected<std::vector<ForwardArgument>> forward_arguments(const std::string& model_path) {
  try {
    torch::jit::Module module = torch::jit::load(model_path, torch::kCPU);
    return arguments_of(module);
  } catch (const std::exception& e) {
    return invalid_argument("cannot load the TorchScript model " + model_path + ": " +
                            torch_error_message(e));
  }
}

Expected<ModelMetadata> describe_model(const DescribeRequest& r) {
  torch::jit::Module module;
  std::vector<ForwardArgument> args;
  try {
    module = torch::jit::load(r.model_path, torch::kCPU);
    module.eval();
    args = arguments_of(module);
  } catch (const std::exception& e) {
    return invalid_argument("cannot load the TorchScript model " + r.model_path + ": " +
                            torch_error_message(e));
  }
  std::map<std::string, const TensorSpec*> given;
  for (const TensorSpec& t : r.inputs) {
    if (!given.emplace(t.name, &t).second)
      return invalid_argument("input " + in_quotes(t.name) + " is given twice");
  }
  ModelMetadata m;
  for (const ForwardArgument& a : args) {
    auto it = given.find(a.name);
    if (it == given.end()) {
      if (a.has_default) break;  // it and those after it keep their defaults
      return invalid_argument("no shape for forward's argument " + in_quotes(a.name) + " (" +
                              a.type + "); give --input " + a.name +
                              ":DTYPE:SHAPE. The model has " + argument_list(args));
    }
    if (a.type != "Tensor" && a.type != "Optional[Tensor]")
      return invalid_argument("forward's argument " + in_quotes(a.name) + " is " + a.type +
                              "; Batchscope passes one tensor per input");
    m.inputs.push_back(*it->second);
    given.erase(it);
  }
  if (!given.empty()) {
    const std::string name = given.begin()->first;
    const bool exists = std::any_of(args.begin(), args.end(),
                                    [&name](const ForwardArgument& a) { return a.name == name; });
    return invalid_argument(
        "input " + in_quotes(name) +
        (exists ? " follows an argument left at its default; inputs are passed in order"
                : " is not an argument of the model's " + argument_list(args)));
  }
  if (m.inputs.empty())
    return invalid_argument("the model's forward takes no tensor: " + argument_list(args));
  if (Status s = check_torch_dtypes(m); !s) return s.error();

  std::vector<std::vector<Observed>> seen;
  for (int64_t b : {1, 2}) {
    std::vector<c10::IValue> zeros;
    std::string shapes;
    for (const TensorSpec& t : m.inputs) {
      std::vector<int64_t> shape{b};
      for (int64_t d : t.item_shape()) shape.push_back(d);
      zeros.emplace_back(at::zeros(shape, at::TensorOptions().dtype(scalar_type(t.dtype))));
      shapes += (shapes.empty() ? "" : ", ") + t.name + " " + dtype_name(t.dtype) + " " +
                shape_string(shape);
    }
    try {
      c10::InferenceMode guard;
      seen.push_back(outputs_of(module.forward(std::move(zeros))));
    } catch (const std::exception& e) {
      return invalid_argument("the forward pass on zeros (" + shapes +
                              ") failed: " + last_line_first(torch_error_message(e)));
    }
  }
  for (size_t k = 0; k < seen[1].size(); ++k) {
    const at::Tensor& two = seen[1][k].tensor;
    const std::string& name = seen[1][k].name;
    auto dt = dtype_of(two.scalar_type());
    if (!dt)
      return invalid_argument("output " + in_quotes(name) + " has datatype " +
                              std::string(c10::toString(two.scalar_type())) +
                              ", which KServe v2 here does not carry (FP32, FP16, FP64, INT64, "
                              "INT32, UINT8, BOOL)");
    const Shape s2(two.sizes().begin(), two.sizes().end());
    if (k >= seen[0].size())
      return invalid_argument("the number of outputs changes with the batch size");
    const at::Tensor& one = seen[0][k].tensor;
    const Shape s1(one.sizes().begin(), one.sizes().end());
    if (s2.empty() || s2[0] != 2 || s1.empty() || s1[0] != 1 ||
        !std::equal(s1.begin() + 1, s1.end(), s2.begin() + 1, s2.end())) {
      return invalid_argument("output " + in_quotes(name) + " has shape " + shape_string(s1) +
                              " for a batch of 1 and " + shape_string(s2) +
                              " for a batch of 2; Batchscope needs outputs batched along their "
                              "first dimension");
    }
    TensorSpec out;
    out.name = name;
    out.dtype = *dt;
    out.shape = s2;
    out.shape[0] = -1;
    m.outputs.push_back(std::move(out));
  }
  m.name = r.name.empty() ? std::filesystem::path(r.model_path).stem().string() : r.name;
  m.description = r.description;
  m.max_batch_size = r.max_batch_size;
  if (Status s = m.validate(); !s) return invalid_argument(r.model_path + ": " + s.message());
  return m;
}

Expected<ModelMetadata> load_model_metadata(const std::string& model_path) {
  const std::string path = sidecar_path(model_path);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto m = load_metadata(path);
    if (!m) return m;
    if (Status s = check_torch_dtypes(*m); !s) return invalid_argument(path + ": " + s.message());
    return m;
  }
  std::string inputs;
  if (auto args = forward_arguments(model_path)) {
    for (const ForwardArgument& a : *args)
      if (!a.has_default) inputs += " --input " + a.name + ":DTYPE:SHAPE";
  }
  if (inputs.empty()) inputs = " --input NAME:DTYPE:SHAPE";
  return invalid_argument("cannot read the model's metadata " + path +
                          " (each model NAME.pt needs a NAME.json beside it); make one with: "
                          "batchscope describe --model " +
                          model_path + inputs);
}

Expected<std::string> write_sidecar(const std::string& model_path, const ModelMetadata& m) {
  namespace fs = std::filesystem;
  const std::string text = metadata_json(m);
  const auto write = [&text](const std::string& path) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) return false;
    out << text;
    out.close();
    return static_cast<bool>(out);
  };
  const std::string beside = sidecar_beside(model_path);
  if (write(beside)) return beside;
  const std::string config = sidecar_in_config(model_path);
  if (config.empty())
    return invalid_argument("cannot write " + beside +
                            ", and neither XDG_CONFIG_HOME nor HOME is set");
  std::error_code ec;
  fs::create_directories(fs::path(config).parent_path(), ec);
  if (ec || !write(config))
    return invalid_argument("cannot write " + beside + " nor " + config +
                            (ec ? ": " + ec.message() : std::string()));
  return config;
}

}  // namespace batchscope
