// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/model_metadata.h"

#include <algorithm>
#include <cctype>
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
  for (int64_t d : item_shape()) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

bool TensorSpec::variable() const {
  for (size_t i = 1; i < shape.size(); ++i)
    if (shape[i] < 0) return true;
  return false;
}

int64_t TensorSpec::item_max(size_t i) const {
  if (i + 1 >= shape.size()) return -1;
  if (shape[i + 1] >= 0) return shape[i + 1];
  return max_shape.size() == shape.size() ? max_shape[i + 1] : -1;
}

Shape TensorSpec::sample_item_shape(int64_t length) const {
  Shape s = item_shape();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] >= 0) continue;
    const int64_t top = item_max(i);
    s[i] = top > 0 ? std::min(length, top) : length;
  }
  return s;
}

std::string TensorSpec::describe() const {
  std::string d = name + " " + dtype_name(dtype) + " " + shape_string(shape);
  if (variable() && !max_shape.empty()) d += " up to " + shape_string(max_shape);
  return d;
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
      if (t.shape[i] == 0 || t.shape[i] < -1) {
        return invalid_argument(std::string(kind) + " '" + t.name + "' has shape " +
                                shape_string(t.shape) +
                                "; each dimension after the batch's is a size from 1 up, or -1 "
                                "where it varies");
      }
    }
    if (t.dtype == DType::kBytes &&
        !(t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[1] == 1))) {
      return invalid_argument(std::string(kind) + " '" + t.name + "' is BYTES with shape " +
                              shape_string(t.shape) +
                              "; a BYTES tensor is one byte string per request, so its shape "
                              "is [-1] or [-1, 1]");
    }
    if (!t.max_shape.empty()) {
      bool fits = t.max_shape.size() == t.shape.size() && t.max_shape[0] == -1;
      for (size_t i = 1; fits && i < t.shape.size(); ++i) {
        fits = t.shape[i] > 0 ? t.max_shape[i] == t.shape[i]
                              : t.max_shape[i] == -1 || t.max_shape[i] >= 1;
      }
      if (!fits) {
        return invalid_argument(std::string(kind) + " '" + t.name + "' has max_shape " +
                                shape_string(t.max_shape) + " against shape " +
                                shape_string(t.shape) +
                                "; it needs the same rank, -1 first, each fixed size as in "
                                "shape and each variable one's largest (or -1)");
      }
    }
    if (t.value_range && t.value_range->first > t.value_range->second) {
      return invalid_argument(std::string(kind) + " '" + t.name + "' has a value range from " +
                              std::to_string(t.value_range->first) + " down to " +
                              std::to_string(t.value_range->second));
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
    if (spec.dtype == DType::kBytes) {
      if (t.shape().size() != 1) {
        return invalid_argument("input '" + spec.name + "' is BYTES with shape " +
                                shape_string(t.shape()) +
                                "; a request's BYTES input is one byte string, shape [length]");
      }
      continue;
    }
    if (!spec.variable() && t.shape() != want) {
      return invalid_argument("input '" + spec.name + "' has shape " + shape_string(t.shape()) +
                              ", expected " + shape_string(want) + " (" +
                              std::to_string(spec.item_numel()) + " elements; the model takes " +
                              shape_string(spec.shape) + ")");
    }
    if (spec.variable()) {
      bool fits = t.shape().size() == want.size();
      for (size_t d = 0; fits && d < want.size(); ++d)
        fits = want[d] >= 0 ? t.shape()[d] == want[d] : t.shape()[d] >= 1;
      if (!fits) {
        return invalid_argument("input '" + spec.name + "' has shape " + shape_string(t.shape()) +
                                ", expected " + shape_string(want) +
                                " (-1: any size from 1; the model takes " +
                                shape_string(spec.shape) + ")");
      }
      for (size_t d = 0; d < want.size(); ++d) {
        const int64_t top = spec.item_max(d);
        if (want[d] < 0 && top > 0 && t.shape()[d] > top) {
          return invalid_argument("input '" + spec.name + "' has shape " + shape_string(t.shape()) +
                                  ": dimension " + std::to_string(d + 1) + " is " +
                                  std::to_string(t.shape()[d]) + ", over its largest " +
                                  std::to_string(top) + " (max_shape " +
                                  shape_string(spec.max_shape) + ")");
        }
      }
    }
    if (spec.finite_only && !all_finite(t)) {
      return invalid_argument(
          "input '" + spec.name +
          "' holds a NaN or infinite value; the model takes finite values only");
    }
  }
  return Status::Ok();
}

namespace {
std::string quoted_text(const std::string& s) { return "'" + s + "'"; }
}  // namespace

Expected<TensorSpec> parse_input_spec(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return invalid_argument("input " + quoted_text(text) + ": " + why +
                            " (expected NAME:DTYPE:SHAPE, e.g. image:FP32:3,224,224)");
  };
  const auto c1 = text.find(':');
  const auto c2 = c1 == std::string::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string::npos) return bad("it needs three parts");
  TensorSpec t;
  t.name = text.substr(0, c1);
  if (t.name.empty()) return bad("the name is empty");
  std::string dt = text.substr(c1 + 1, c2 - c1 - 1);
  for (char& c : dt) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto d = parse_dtype(dt);
  if (!d)
    return bad("datatype " + quoted_text(dt) +
               " is not FP32, FP16, FP64, INT64, INT32, UINT8, BOOL or BYTES");
  t.dtype = *d;
  t.shape.push_back(-1);
  std::string shape = text.substr(c2 + 1);
  std::string part;
  const auto take = [&]() -> bool {
    if (part.empty()) return false;
    if (part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos) return false;
    const int64_t v = std::stoll(part);
    if (v < 1) return false;
    t.shape.push_back(v);
    part.clear();
    return true;
  };
  for (char c : shape) {
    if (c == '[' || c == ']' || c == ' ') continue;
    if (c == ',' || c == 'x') {
      if (!take()) return bad("shape " + quoted_text(shape) + " needs whole sizes from 1 up");
    } else {
      part += c;
    }
  }
  if (!part.empty() && !take())
    return bad("shape " + quoted_text(shape) + " needs whole sizes from 1 up");
  return t;
}

uint32_t request_length(const ModelMetadata& model, const Tensors& inputs) {
  for (size_t k = 0; k < model.inputs.size() && k < inputs.size(); ++k) {
    if (model.inputs[k].dtype == DType::kBytes) continue;  // a string's length pads nothing
    const Shape item = model.inputs[k].item_shape();
    const Shape& got = inputs[k].shape();
    for (size_t d = 0; d < item.size() && d < got.size(); ++d) {
      if (item[d] < 0) return static_cast<uint32_t>(std::clamp<int64_t>(got[d], 0, UINT32_MAX));
    }
  }
  return 0;
}

bool has_variable_inputs(const ModelMetadata& model) {
  for (const TensorSpec& t : model.inputs)
    if (t.variable()) return true;
  return false;
}

namespace {
constexpr int64_t kRandomBytes = 16;  // a drawn BYTES input's length
}  // namespace

Tensors random_inputs(const ModelMetadata& model, uint64_t seed, int64_t length) {
  if (!model.examples.empty()) return model.examples[seed % model.examples.size()];
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensors out;
  for (const TensorSpec& spec : model.inputs) {
    Tensor t(spec.dtype, spec.dtype == DType::kBytes
                             ? Shape{kRandomBytes}
                             : spec.sample_item_shape(length > 0 ? length : 16));
    const auto [lo, hi] = spec.value_range.value_or(std::pair<int64_t, int64_t>{0, 9});
    std::uniform_int_distribution<int64_t> digit(lo, hi);
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
        for (int32_t& v : t.as<int32_t>()) v = static_cast<int32_t>(digit(rng));
        break;
      case DType::kUInt8:
      case DType::kBool:
        for (uint8_t& v : t.as<uint8_t>()) {
          v = static_cast<uint8_t>(spec.dtype == DType::kBool ? rng() & 1u : digit(rng));
        }
        break;
      case DType::kBytes: {
        std::uniform_int_distribution<int> printable(0x20, 0x7e);
        for (uint8_t& v : t.as<uint8_t>()) v = static_cast<uint8_t>(printable(rng));
        break;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace batchscope
