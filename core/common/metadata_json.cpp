// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/metadata_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace batchscope {

namespace {

using nlohmann::json;

struct Bad {
  std::string message;
};

const json& field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw Bad{where + ": '" + key + "' is missing"};
  return *it;
}

TensorSpec read_spec(const json& j, const std::string& where) {
  if (!j.is_object()) throw Bad{where + " must be an object"};
  TensorSpec t;
  const json& name = field(j, "name", where);
  if (!name.is_string()) throw Bad{where + ".name must be a string"};
  t.name = name.get<std::string>();
  const json& dt = field(j, "datatype", where);
  auto parsed = dt.is_string() ? parse_dtype(dt.get<std::string>()) : std::nullopt;
  if (!parsed) {
    throw Bad{where + ".datatype " + dt.dump() +
              " is not a supported KServe v2 datatype (FP32, FP16, FP64, INT64, INT32, UINT8, "
              "BOOL, BYTES)"};
  }
  t.dtype = *parsed;
  const json& shape = field(j, "shape", where);
  if (!shape.is_array()) throw Bad{where + ".shape must be an array of integers"};
  for (const json& d : shape) {
    if (!d.is_number_integer()) throw Bad{where + ".shape must be an array of integers"};
    t.shape.push_back(d.get<int64_t>());
  }
  if (auto f = j.find("finite_only"); f != j.end()) {
    if (!f->is_boolean()) throw Bad{where + ".finite_only must be true or false"};
    t.finite_only = f->get<bool>();
  }
  if (auto f = j.find("max_shape"); f != j.end()) {
    if (!f->is_array()) throw Bad{where + ".max_shape must be an array of integers"};
    for (const json& d : *f) {
      if (!d.is_number_integer()) throw Bad{where + ".max_shape must be an array of integers"};
      t.max_shape.push_back(d.get<int64_t>());
    }
  }
  if (auto f = j.find("pad_value"); f != j.end()) {
    if (!f->is_number()) throw Bad{where + ".pad_value must be a number, got " + f->dump()};
    t.pad_value = f->get<double>();
  }
  if (auto f = j.find("range"); f != j.end()) {
    if (!f->is_array() || f->size() != 2 || !(*f)[0].is_number_integer() ||
        !(*f)[1].is_number_integer())
      throw Bad{where + ".range must be [LOW, HIGH], two integers, got " + f->dump()};
    t.value_range = std::pair((*f)[0].get<int64_t>(), (*f)[1].get<int64_t>());
  }
  return t;
}

std::vector<TensorSpec> read_specs(const json& root, const char* key, const std::string& origin) {
  const json& arr = field(root, key, origin);
  if (!arr.is_array()) throw Bad{origin + ": '" + key + "' must be an array"};
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    out.push_back(read_spec(arr[i], origin + ": " + key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

}  // namespace

Expected<ModelMetadata> parse_metadata(const std::string& json_text, const std::string& origin) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return invalid_argument(origin + " is not valid JSON: " + e.what());
  }
  ModelMetadata m;
  try {
    if (!root.is_object()) throw Bad{origin + " must hold a JSON object"};
    const json& name = field(root, "name", origin);
    if (!name.is_string()) throw Bad{origin + ": 'name' must be a string"};
    m.name = name.get<std::string>();
    if (auto d = root.find("description"); d != root.end() && d->is_string()) {
      m.description = d->get<std::string>();
    }
    const json& mb = field(root, "max_batch_size", origin);
    if (!mb.is_number_integer() || mb.get<int64_t>() < 1 || mb.get<int64_t>() > 1'000'000) {
      throw Bad{origin + ": 'max_batch_size' must be a whole number from 1 to 1000000, got " +
                mb.dump()};
    }
    m.max_batch_size = static_cast<uint32_t>(mb.get<int64_t>());
    m.inputs = read_specs(root, "inputs", origin);
    m.outputs = read_specs(root, "outputs", origin);
  } catch (const Bad& b) {
    return invalid_argument(b.message);
  }
  if (Status s = m.validate(); !s) return invalid_argument(origin + ": " + s.message());
  return m;
}

Expected<ModelMetadata> load_metadata(const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) {
    return invalid_argument("cannot read the model's metadata " + json_path +
                            " (each model NAME.pt needs a NAME.json beside it)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_metadata(text.str(), json_path);
}

std::string metadata_json(const ModelMetadata& m) {
  // One line a tensor, so that a person reads the shapes at a glance.
  using ojson = nlohmann::ordered_json;
  const auto text = [](const ojson& j) {
    return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
  };
  const auto dims = [](const Shape& shape) {
    std::string out;
    for (int64_t d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
    return "[" + out + "]";
  };
  const auto specs = [&text, &dims](const std::vector<TensorSpec>& list) {
    std::string out = "[\n";
    for (size_t i = 0; i < list.size(); ++i) {
      const TensorSpec& t = list[i];
      out += "    {\"name\": " + text(t.name) + ", \"datatype\": \"" + dtype_name(t.dtype) +
             "\", \"shape\": " + dims(t.shape);
      if (!t.max_shape.empty()) out += ", \"max_shape\": " + dims(t.max_shape);
      if (t.pad_value != 0) out += ", \"pad_value\": " + text(t.pad_value);
      if (t.value_range)
        out += ", \"range\": [" + std::to_string(t.value_range->first) + ", " +
               std::to_string(t.value_range->second) + "]";
      if (t.finite_only) out += ", \"finite_only\": true";
      out += std::string("}") + (i + 1 < list.size() ? "," : "") + "\n";
    }
    return out + "  ]";
  };
  std::string out = "{\n  \"name\": " + text(m.name) + ",\n";
  if (!m.description.empty()) out += "  \"description\": " + text(m.description) + ",\n";
  out += "  \"max_batch_size\": " + std::to_string(m.max_batch_size) + ",\n";
  out += "  \"inputs\": " + specs(m.inputs) + ",\n";
  out += "  \"outputs\": " + specs(m.outputs) + "\n}\n";
  return out;
}

}  // namespace batchscope
