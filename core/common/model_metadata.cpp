// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/model_metadata.h"

#include <cmath>
#include <cstring>
#include <random>
#include <set>

namespace batchscope {

Shape TensorSpec::item_shape() const {
  return shape.empty() ? Shape{} : Shape(shape.begin() + 1, shape.end());
}

int64_t TensorSpec::item_numel() const {
  int64_t n = 1;
  for (int64_t d : item_shape()) n *= d;
  return n;
}

std::string TensorSpec::describe() const {
  return name + " " + dtype_name(dtype) + " " + shape_string(shape);
}

namespace {

Status check_specs(const std::vector<TensorSpec>& specs, const char* kind) {
  if (specs.empty()) return invalid_argument(std::string("the model declares no ") + kind + "s");
  std::set<std::string> names;
  for (const TensorSpec& t : specs) {
    if (t.name.empty()) return invalid_argument(std::string("an ") + kind + " has no name");
    if (!names.insert(t.name).second) {
      return invalid_argument(std::string(kind) + " name '" + t.name + "' appears twice");
    }
    if (t.shape.empty() || t.shape[0] != -1) {
      return invalid_argument(std::string(kind) + " '" + t.name + "' has shape " +
                              shape_string(t.shape) +
                              "; its first dimension must be -1, the batch dimension");
    }
    for (size_t i = 1; i < t.shape.size(); ++i) {
      if (t.shape[i] <= 0) {
        return invalid_argument(std::string(kind) + " '" + t.name + "' has shape " +
                                shape_string(t.shape) +
                                "; only the batch dimension may be -1, others must be positive");
      }
    }
  }
  return Status::Ok();
}

bool all_finite(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32:
      for (float v : t.as<float>()) {
        if (!std::isfinite(v)) return false;
      }
      return true;
    case DType::kFloat64:
      for (double v : t.as<double>()) {
        if (!std::isfinite(v)) return false;
      }
      return true;
    case DType::kFloat16:
      // Exponent bits all set: infinity or NaN.
      for (uint16_t v : t.as<uint16_t>()) {
        if ((v & 0x7c00u) == 0x7c00u) return false;
      }
      return true;
    default: return true;
  }
}

}  // namespace

Status ModelMetadata::validate() const {
  if (max_batch_size == 0) return invalid_argument("max_batch_size must be at least 1");
  if (Status s = check_specs(inputs, "input"); !s) return s;
  return check_specs(outputs, "output");
}

Status check_inputs(const ModelMetadata& model, const Tensors& inputs) {
  if (inputs.size() != model.inputs.size()) {
    std::string names;
    for (const TensorSpec& t : model.inputs) names += (names.empty() ? "" : ", ") + t.name;
    return invalid_argument("model '" + model.name + "' takes " +
                            std::to_string(model.inputs.size()) + " input(s) (" + names +
                            "), got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& spec = model.inputs[i];
    const Tensor& t = inputs[i];
    const Shape want = spec.item_shape();
    if (t.dtype() != spec.dtype) {
      return invalid_argument("input '" + spec.name + "' has datatype " + dtype_name(t.dtype()) +
                              ", expected " + dtype_name(spec.dtype));
    }
    if (t.shape() != want) {
      return invalid_argument("input '" + spec.name + "' has shape " + shape_string(t.shape()) +
                              ", expected " + shape_string(want) + " (" +
                              std::to_string(spec.item_numel()) + " elements; the model takes " +
                              shape_string(spec.shape) + ")");
    }
    if (spec.finite_only && !all_finite(t)) {
      return invalid_argument(
          "input '" + spec.name +
          "' holds a NaN or infinite value; the model takes finite values only");
    }
  }
  return Status::Ok();
}

Tensors random_inputs(const ModelMetadata& model, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> digit(0, 9);
  Tensors out;
  for (const TensorSpec& spec : model.inputs) {
    Tensor t(spec.dtype, spec.item_shape());
    switch (spec.dtype) {
      case DType::kFloat32:
        for (float& v : t.as<float>()) v = normal(rng);
        break;
      case DType::kFloat64:
        for (double& v : t.as<double>()) v = normal(rng);
        break;
      case DType::kFloat16:
        for (uint16_t& v : t.as<uint16_t>()) v = float_to_half(normal(rng));
        break;
      case DType::kInt64:
        for (int64_t& v : t.as<int64_t>()) v = digit(rng);
        break;
      case DType::kInt32:
        for (int32_t& v : t.as<int32_t>()) v = digit(rng);
        break;
      case DType::kUInt8:
      case DType::kBool:
        for (uint8_t& v : t.as<uint8_t>()) {
          v = static_cast<uint8_t>(spec.dtype == DType::kBool ? rng() & 1u : digit(rng));
        }
        break;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace batchscope
