#include "infer_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <charconv>
#include <cmath>
#include <cstring>

namespace batchscope {

namespace {

HttpError unfit(std::string m) { return HttpError{422, std::move(m)}; }
HttpError malformed(std::string m) { return HttpError{400, std::move(m)}; }

// The fast path for {"data": [n, n, ...]}: returns false (and leaves `out`
// unspecified) on anything else, which then goes through the full parser.
bool scan_simple(std::string_view s, std::vector<float>& out) {
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  };
  auto lit = [&](std::string_view w) {
    ws();
    if (s.substr(i, w.size()) != w) return false;
    i += w.size();
    return true;
  };
  if (!lit("{") || !lit("\"data\"") || !lit(":") || !lit("[")) return false;
  ws();
  if (i < s.size() && s[i] == ']') {
    ++i;
  } else {
    for (;;) {
      ws();
      float v = 0;
      auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
      if (ec != std::errc()) return false;
      i = static_cast<size_t>(p - s.data());
      out.push_back(v);
      ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == ']') {
        ++i;
        break;
      }
      return false;
    }
  }
  if (!lit("}")) return false;
  ws();
  return i == s.size();
}

void flatten(const QJsonValue& v, std::vector<QJsonValue>& out) {
  if (v.isArray()) {
    for (const QJsonValue& e : v.toArray()) flatten(e, out);
  } else {
    out.push_back(v);
  }
}

// Writes JSON values into a tensor of `dtype`; an element of the wrong kind
// is an error naming the input and the index.
std::optional<HttpError> fill(Tensor& t, const std::vector<QJsonValue>& vals,
                              const std::string& input) {
  auto bad = [&](size_t i, const char* want) {
    return unfit("input '" + input + "' element " + std::to_string(i) + " is not " + want);
  };
  for (size_t i = 0; i < vals.size(); ++i) {
    const QJsonValue& v = vals[i];
    switch (t.dtype()) {
      case DType::kFloat32:
        if (!v.isDouble()) return bad(i, "a number");
        t.as<float>()[i] = static_cast<float>(v.toDouble());
        break;
      case DType::kFloat64:
        if (!v.isDouble()) return bad(i, "a number");
        t.as<double>()[i] = v.toDouble();
        break;
      case DType::kFloat16:
        if (!v.isDouble()) return bad(i, "a number");
        t.as<uint16_t>()[i] = float_to_half(static_cast<float>(v.toDouble()));
        break;
      case DType::kInt64:
      case DType::kInt32:
      case DType::kUInt8: {
        const double d = v.toDouble();
        if (!v.isDouble() || d != std::floor(d)) return bad(i, "a whole number");
        if (t.dtype() == DType::kInt64)
          t.as<int64_t>()[i] = static_cast<int64_t>(d);
        else if (t.dtype() == DType::kInt32)
          t.as<int32_t>()[i] = static_cast<int32_t>(d);
        else if (d < 0 || d > 255)
          return bad(i, "a whole number from 0 to 255");
        else
          t.as<uint8_t>()[i] = static_cast<uint8_t>(d);
        break;
      }
      case DType::kBool:
        if (!v.isBool()) return bad(i, "true or false");
        t.as<uint8_t>()[i] = v.toBool() ? 1 : 0;
        break;
    }
  }
  return std::nullopt;
}

std::optional<QJsonObject> parse_object(std::string_view body, HttpError& err) {
  QJsonParseError pe{};
  const QJsonDocument doc =
      QJsonDocument::fromJson(QByteArray(body.data(), static_cast<qsizetype>(body.size())), &pe);
  if (pe.error != QJsonParseError::NoError) {
    err = malformed("the body is not valid JSON: " + pe.errorString().toStdString() +
                    " at offset " + std::to_string(pe.offset));
    return std::nullopt;
  }
  if (!doc.isObject()) {
    err = malformed("the body must be a JSON object");
    return std::nullopt;
  }
  return doc.object();
}

}  // namespace

HttpExpected<Tensors> parse_simple_infer(std::string_view body, const ModelMetadata& model) {
  if (model.inputs.size() != 1) {
    return unfit("/infer takes models with one input; model '" + model.name + "' has " +
                 std::to_string(model.inputs.size()) + "; use /v2/models/" + model.name + "/infer");
  }
  const TensorSpec& spec = model.inputs[0];
  Tensor t(spec.dtype, spec.item_shape());
  std::vector<float> fast;
  fast.reserve(static_cast<size_t>(spec.item_numel()));
  if (spec.dtype == DType::kFloat32 && scan_simple(body, fast)) {
    if (static_cast<int64_t>(fast.size()) != spec.item_numel()) {
      return unfit("'data' has " + std::to_string(fast.size()) + " values, expected " +
                   std::to_string(spec.item_numel()) + " (input '" + spec.name + "' " +
                   shape_string(spec.item_shape()) + ")");
    }
    std::memcpy(t.data(), fast.data(), t.nbytes());
    Tensors in;
    in.push_back(std::move(t));
    return in;
  }
  HttpError err;
  auto obj = parse_object(body, err);
  if (!obj) return err;
  if (!obj->contains("data"))
    return malformed("the body has no 'data' field: send {\"data\": [...]}");
  std::vector<QJsonValue> vals;
  flatten(obj->value("data"), vals);
  if (static_cast<int64_t>(vals.size()) != spec.item_numel()) {
    return unfit("'data' has " + std::to_string(vals.size()) + " values, expected " +
                 std::to_string(spec.item_numel()) + " (input '" + spec.name + "' " +
                 shape_string(spec.item_shape()) + ")");
  }
  if (auto e = fill(t, vals, spec.name)) return *e;
  Tensors in;
  in.push_back(std::move(t));
  return in;
}

HttpExpected<V2Request> parse_v2_request(std::string_view body, const ModelMetadata& model) {
  HttpError err;
  auto obj = parse_object(body, err);
  if (!obj) return err;
  V2Request req;
  if (obj->contains("id")) {
    if (!obj->value("id").isString()) return malformed("'id' must be a string");
    req.id = obj->value("id").toString().toStdString();
    req.has_id = true;
  }
  if (!obj->value("inputs").isArray()) return malformed("the body needs an 'inputs' array");
  const QJsonArray inputs = obj->value("inputs").toArray();
  req.inputs.resize(model.inputs.size());
  std::vector<bool> seen(model.inputs.size(), false);
  int64_t rows = -1;
  for (const QJsonValue& iv : inputs) {
    if (!iv.isObject()) return malformed("each entry of 'inputs' must be an object");
    const QJsonObject in = iv.toObject();
    const std::string name = in.value("name").toString().toStdString();
    size_t k = 0;
    while (k < model.inputs.size() && model.inputs[k].name != name) ++k;
    if (k == model.inputs.size()) {
      std::string names;
      for (const TensorSpec& s : model.inputs) names += (names.empty() ? "" : ", ") + s.name;
      return unfit("model '" + model.name + "' has no input '" + name + "'; its inputs: " + names);
    }
    if (seen[k]) return malformed("input '" + name + "' appears twice");
    seen[k] = true;
    const TensorSpec& spec = model.inputs[k];
    const std::string dt = in.value("datatype").toString().toStdString();
    if (dt != dtype_name(spec.dtype)) {
      return unfit("input '" + name + "' has datatype '" + dt + "', expected " +
                   dtype_name(spec.dtype));
    }
    if (!in.value("shape").isArray())
      return malformed("input '" + name + "' needs a 'shape' array");
    Shape shape;
    for (const QJsonValue& d : in.value("shape").toArray()) {
      if (!d.isDouble() || d.toDouble() < 0 || d.toDouble() != std::floor(d.toDouble())) {
        return malformed("input '" + name + "' shape must hold whole numbers >= 0");
      }
      shape.push_back(static_cast<int64_t>(d.toDouble()));
    }
    Shape want = spec.item_shape();
    want.insert(want.begin(), shape.empty() ? 0 : shape[0]);
    if (shape.empty() || shape != want || shape[0] < 1) {
      return unfit("input '" + name + "' has shape " + shape_string(shape) + ", expected " +
                   shape_string(spec.shape) + " with at least one row (rows first, then " +
                   shape_string(spec.item_shape()) + ")");
    }
    if (rows >= 0 && shape[0] != rows) {
      return unfit("input '" + name + "' has " + std::to_string(shape[0]) +
                   " rows; the other inputs have " + std::to_string(rows));
    }
    rows = shape[0];
    std::vector<QJsonValue> vals;
    flatten(in.value("data"), vals);
    Tensor t(spec.dtype, shape);
    if (static_cast<int64_t>(vals.size()) != t.numel()) {
      return unfit("input '" + name + "' has " + std::to_string(vals.size()) + " values; shape " +
                   shape_string(shape) + " needs " + std::to_string(t.numel()));
    }
    if (auto e = fill(t, vals, name)) return *e;
    req.inputs[k] = V2Input{name, std::move(t)};
  }
  for (size_t k = 0; k < seen.size(); ++k) {
    if (!seen[k]) return unfit("input '" + model.inputs[k].name + "' is missing");
  }
  if (obj->contains("outputs")) {
    if (!obj->value("outputs").isArray()) return malformed("'outputs' must be an array");
    for (const QJsonValue& ov : obj->value("outputs").toArray()) {
      const std::string name = ov.toObject().value("name").toString().toStdString();
      bool known = false;
      for (const TensorSpec& s : model.outputs) known = known || s.name == name;
      if (!known) return unfit("model '" + model.name + "' has no output '" + name + "'");
      req.outputs.push_back(name);
    }
  }
  return req;
}

Tensors v2_row(const V2Request& req, int64_t row) {
  Tensors out;
  for (const V2Input& in : req.inputs) {
    Shape item(in.tensor.shape().begin() + 1, in.tensor.shape().end());
    Tensor t(in.tensor.dtype(), item);
    std::memcpy(t.data(), in.tensor.data() + static_cast<size_t>(row) * t.nbytes(), t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

template <class T>
void append_values(std::string& out, std::span<const T> vals) {
  char buf[32];
  for (size_t i = 0; i < vals.size(); ++i) {
    if (i) out += ',';
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(vals[i])) {
        out += "null";
        continue;
      }
    }
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, vals[i]);
    out.append(buf, p);
  }
}

}  // namespace

void append_json_values(std::string& out, const Tensor& t) {
  out += '[';
  switch (t.dtype()) {
    case DType::kFloat32: append_values(out, t.as<float>()); break;
    case DType::kFloat64: append_values(out, t.as<double>()); break;
    case DType::kInt64: append_values(out, t.as<int64_t>()); break;
    case DType::kInt32: append_values(out, t.as<int32_t>()); break;
    case DType::kUInt8: append_values(out, t.as<uint8_t>()); break;
    case DType::kBool: {
      auto v = t.as<uint8_t>();
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        out += v[i] ? "true" : "false";
      }
      break;
    }
    case DType::kFloat16: {
      auto v = t.as<uint16_t>();
      std::vector<float> f(v.size());
      for (size_t i = 0; i < v.size(); ++i) f[i] = half_to_float(v[i]);
      append_values(out, std::span<const float>(f));
      break;
    }
  }
  out += ']';
}

}  // namespace batchscope
