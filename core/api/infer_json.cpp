// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/infer_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace batchscope {

namespace {

HttpError unfit(std::string m) { return HttpError{422, std::move(m)}; }
HttpError malformed(std::string m) { return HttpError{400, std::move(m)}; }

// The fast path for {"data": [n, n, ...]}: the first `limit` values go to
// `out`, all of them are counted. Returns false (and leaves `out` and `count`
// unspecified) on anything else, which then goes through the full parser.
bool scan_simple(std::string_view s, std::vector<float>& out, size_t limit, uint64_t& count) {
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
      // Stored up to what the model takes; beyond it only counted, so a
      // body of millions of values costs no memory on the way to its 422.
      if (out.size() < limit) out.push_back(v);
      ++count;
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

// The values of a (possibly nested) array, counted in place: nothing is
// copied, so a body's values are held once, by the JSON document. Depth is
// bounded by the JSON parser's nesting limit.
uint64_t count_values(const QJsonValue& v) {
  if (!v.isArray()) return 1;
  uint64_t n = 0;
  for (const QJsonValue& e : v.toArray()) n += count_values(e);
  return n;
}

// A double beyond float's range becomes an infinity explicitly (the plain
// conversion is undefined there); the model's finite check then refuses it.
float to_float(double d) {
  // 2^128 - 2^103: from here on a double rounds to infinity; below it, to
  // at most FLT_MAX (so numpy's printed float32 max, 3.4028235e+38, fits).
  constexpr double kOverflow = 340282356779733661637539395458142568448.0;
  if (d >= kOverflow) return std::numeric_limits<float>::infinity();
  if (d <= -kOverflow) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

// Writes one JSON value into element i of a tensor; an element of the wrong
// kind is an error naming the input and the index.
std::optional<HttpError> put(Tensor& t, size_t i, const QJsonValue& v, const std::string& input) {
  auto bad = [&](const char* want) {
    return unfit("input '" + input + "' element " + std::to_string(i) + " is not " + want);
  };
  switch (t.dtype()) {
    case DType::kFloat32:
      if (!v.isDouble()) return bad("a number");
      t.as<float>()[i] = to_float(v.toDouble());
      break;
    case DType::kFloat64:
      if (!v.isDouble()) return bad("a number");
      t.as<double>()[i] = v.toDouble();
      break;
    case DType::kFloat16:
      if (!v.isDouble()) return bad("a number");
      t.as<uint16_t>()[i] = float_to_half(to_float(v.toDouble()));
      break;
    case DType::kInt64:
    case DType::kInt32:
    case DType::kUInt8: {
      const double d = v.toDouble();
      if (!v.isDouble() || d != std::floor(d)) return bad("a whole number");
      // Range-checked before the conversion, which is undefined outside it.
      if (t.dtype() == DType::kInt64) {
        if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
          return bad("a whole number within INT64's range");
        t.as<int64_t>()[i] = static_cast<int64_t>(d);
      } else if (t.dtype() == DType::kInt32) {
        if (d < -2147483648.0 || d > 2147483647.0)
          return bad("a whole number within INT32's range");
        t.as<int32_t>()[i] = static_cast<int32_t>(d);
      } else if (d < 0 || d > 255) {
        return bad("a whole number from 0 to 255");
      } else {
        t.as<uint8_t>()[i] = static_cast<uint8_t>(d);
      }
      break;
    }
    case DType::kBool:
      if (!v.isBool()) return bad("true or false");
      t.as<uint8_t>()[i] = v.toBool() ? 1 : 0;
      break;
    case DType::kBytes:  // read one string a row (fill_strings), never element by element
      return unfit("input '" + input + "' is BYTES: one JSON string a row");
  }
  return std::nullopt;
}

// Writes the values of a (possibly nested) array into the tensor in order;
// the caller has checked with count_values() that they fill it exactly.
std::optional<HttpError> fill(Tensor& t, const QJsonValue& v, size_t& i, const std::string& input) {
  if (!v.isArray()) return put(t, i++, v, input);
  for (const QJsonValue& e : v.toArray()) {
    if (auto err = fill(t, e, i, input)) return err;
  }
  return std::nullopt;
}

std::optional<HttpError> fill(Tensor& t, const QJsonValue& v, const std::string& input) {
  size_t i = 0;
  return fill(t, v, i, input);
}

// A JSON value from the client quoted for a message: a number as written,
// true, null, a string or an object cut short (quoted_excerpt()).
std::string quoted_value(const QJsonValue& v) {
  std::string text;
  if (v.isDouble()) {
    append_json_number(text, v.toDouble());
  } else if (v.isBool()) {
    text = v.toBool() ? "true" : "false";
  } else if (v.isNull()) {
    text = "null";
  } else if (v.isString()) {
    append_json_string(text, v.toString().toStdString());
  } else if (v.isObject()) {
    text = QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact).toStdString();
  } else if (v.isArray()) {
    text = QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact).toStdString();
  }
  return quoted_excerpt(text);
}

// A BYTES input's strings, one a row, in order (nested arrays flattened):
// each string's UTF-8 bytes as Tensor(kBytes, {length}). Anything but a
// string is an error quoting it.
std::optional<HttpError> fill_strings(std::vector<Tensor>& out, const QJsonValue& v,
                                      const std::string& input) {
  if (v.isArray()) {
    for (const QJsonValue& e : v.toArray()) {
      if (auto err = fill_strings(out, e, input)) return err;
    }
    return std::nullopt;
  }
  if (!v.isString()) {
    return unfit("input '" + input + "' element " + std::to_string(out.size()) + " is " +
                 quoted_value(v) + ", not a string: BYTES takes one JSON string a row");
  }
  const QByteArray utf8 = v.toString().toUtf8();
  out.push_back(
      Tensor::from_bytes(std::string_view(utf8.constData(), static_cast<size_t>(utf8.size()))));
  return std::nullopt;
}

// The v2 data of a BYTES input, whose shape (already checked) has `rows`
// rows: one string each.
std::optional<HttpError> read_strings(V2Input& in, const QJsonValue& data) {
  const uint64_t n = count_values(data);
  if (n != static_cast<uint64_t>(in.rows())) {
    return unfit("input '" + in.name + "' has " + std::to_string(n) + " values in 'data'; shape " +
                 shape_string(in.shape) + " needs " + std::to_string(in.rows()) +
                 " strings, one a row");
  }
  in.strings.reserve(n);  // no more than the values already in the body
  return fill_strings(in.strings, data, in.name);
}

// "[3000000000, 128]", or for a shape of absurd rank its length alone.
std::string shape_text(const Shape& shape) {
  if (shape.size() <= 16) return shape_string(shape);
  return "of " + std::to_string(shape.size()) + " dimensions";
}

std::string decimal(unsigned __int128 v) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
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

// /infer for an input with one variable dimension: the values' count tells
// its length (the other dimensions fixed), from 1 to its largest.
HttpExpected<Tensors> parse_simple_varied(std::string_view body, const TensorSpec& spec) {
  const Shape item = spec.item_shape();
  size_t var = item.size();
  uint64_t fixed = 1;
  for (size_t d = 0; d < item.size(); ++d) {
    if (item[d] >= 0) {
      fixed *= static_cast<uint64_t>(item[d]);
    } else if (var != item.size()) {
      return unfit("input '" + spec.name + "' " + shape_string(spec.shape) +
                   " varies in more than one dimension; /infer cannot tell its shape, send "
                   "KServe v2 with a 'shape'");
    } else {
      var = d;
    }
  }
  HttpError err;
  auto obj = parse_object(body, err);
  if (!obj) return err;
  if (!obj->contains("data"))
    return malformed("the body has no 'data' field: send {\"data\": [...]}");
  const QJsonValue data = obj->value("data");
  const uint64_t n = count_values(data);
  const int64_t top = spec.item_max(var);
  if (n == 0 || n % fixed != 0) {
    return unfit("'data' has " + std::to_string(n) + " values, not a whole number of " +
                 std::to_string(fixed) + " (input '" + spec.name + "' " + shape_string(item) +
                 ", one length at least)");
  }
  if (top > 0 && n / fixed > static_cast<uint64_t>(top)) {
    return unfit("'data' has " + std::to_string(n) + " values: a length of " +
                 std::to_string(n / fixed) + ", over input '" + spec.name + "''s largest " +
                 std::to_string(top) + " (max_shape " + shape_string(spec.max_shape) + ")");
  }
  Shape shape = item;
  shape[var] = static_cast<int64_t>(n / fixed);
  Tensor t(spec.dtype, shape);  // no larger than the values already in the body
  if (auto e = fill(t, data, spec.name)) return *e;
  Tensors in;
  in.push_back(std::move(t));
  return in;
}

}  // namespace

HttpExpected<Tensors> parse_simple_infer(std::string_view body, const ModelMetadata& model) {
  if (model.inputs.size() != 1) {
    return unfit("/infer takes models with one input; model '" + model.name + "' has " +
                 std::to_string(model.inputs.size()) + "; use /v2/models/" + model.name + "/infer");
  }
  const TensorSpec& spec = model.inputs[0];
  if (spec.dtype == DType::kBytes) {
    return unfit("input '" + spec.name +
                 "' is BYTES (a byte string per request), which /infer's {\"data\": [numbers]} "
                 "does not carry; send KServe v2 to /v2/models/" +
                 model.name + "/infer with {\"name\": \"" + spec.name +
                 "\", \"datatype\": \"BYTES\", \"shape\": [1], \"data\": [\"...\"]}");
  }
  if (spec.variable()) return parse_simple_varied(body, spec);
  Tensor t(spec.dtype, spec.item_shape());
  std::vector<float> fast;
  const auto want = static_cast<size_t>(spec.item_numel());
  fast.reserve(want);
  uint64_t count = 0;
  if (spec.dtype == DType::kFloat32 && scan_simple(body, fast, want, count)) {
    if (count != want) {
      return unfit("'data' has " + std::to_string(count) + " values, expected " +
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
  const QJsonValue data = obj->value("data");
  const uint64_t n = count_values(data);
  if (n != want) {
    return unfit("'data' has " + std::to_string(n) + " values, expected " +
                 std::to_string(spec.item_numel()) + " (input '" + spec.name + "' " +
                 shape_string(spec.item_shape()) + ")");
  }
  if (auto e = fill(t, data, spec.name)) return *e;
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
      return unfit("model '" + model.name + "' has no input " + quoted_excerpt(name) +
                   "; its inputs: " + names);
    }
    if (seen[k]) return malformed("input '" + name + "' appears twice");
    seen[k] = true;
    const TensorSpec& spec = model.inputs[k];
    const std::string dt = in.value("datatype").toString().toStdString();
    if (dt != dtype_name(spec.dtype)) {
      return unfit("input '" + name + "' has datatype " + quoted_excerpt(dt) + ", expected " +
                   dtype_name(spec.dtype));
    }
    if (!in.value("shape").isArray())
      return malformed("input '" + name + "' needs a 'shape' array");
    // Every size here comes from the client: the shape is checked against
    // the model and the data's length before a byte is allocated for it.
    const QJsonArray dims = in.value("shape").toArray();
    if (static_cast<size_t>(dims.size()) > spec.shape.size() + 16) {
      return unfit("input '" + name + "' has a shape of " + std::to_string(dims.size()) +
                   " dimensions, expected " + shape_string(spec.shape));
    }
    Shape shape;
    for (const QJsonValue& d : dims) {
      const double x = d.toDouble();
      if (!d.isDouble() || x < 0 || x != std::floor(x)) {
        return malformed("input '" + name + "' shape must hold whole numbers >= 0");
      }
      // 2^53: the largest whole number a JSON double holds exactly; also
      // keeps the conversion below defined.
      if (x > 9007199254740992.0) {
        std::string v;
        append_json_number(v, x);
        return unfit("input '" + name + "' has a dimension of " + v + ", beyond any tensor");
      }
      shape.push_back(static_cast<int64_t>(x));
    }
    if (spec.dtype == DType::kBytes) {
      // One string a row: [rows] or [rows, 1], whichever the model declares.
      const bool one_a_row = !shape.empty() && shape[0] >= 1 &&
                             (shape.size() == 1 || (shape.size() == 2 && shape[1] == 1));
      if (!one_a_row) {
        return unfit("input '" + name + "' has shape " + shape_text(shape) +
                     ", expected [rows] or [rows, 1] with at least one row (BYTES: one "
                     "string a row)");
      }
    }
    Shape want = spec.item_shape();
    want.insert(want.begin(), shape.empty() ? 0 : shape[0]);
    // A variable dimension takes the size sent, from 1 to its largest.
    for (size_t d = 1; d < want.size() && d < shape.size(); ++d) {
      if (want[d] < 0 && shape[d] >= 1) want[d] = shape[d];
    }
    if (spec.dtype != DType::kBytes && (shape.empty() || shape != want || shape[0] < 1)) {
      return unfit("input '" + name + "' has shape " + shape_text(shape) + ", expected " +
                   shape_string(spec.shape) + " with at least one row (rows first, then " +
                   shape_string(spec.item_shape()) + (spec.variable() ? ", -1 from 1 up" : "") +
                   ")");
    }
    for (size_t d = 1; d < shape.size() && spec.dtype != DType::kBytes; ++d) {
      const int64_t top = spec.item_max(d - 1);
      if (spec.shape[d] < 0 && top > 0 && shape[d] > top) {
        return unfit("input '" + name + "' has shape " + shape_text(shape) + ": dimension " +
                     std::to_string(d) + " is " + std::to_string(shape[d]) + ", over its largest " +
                     std::to_string(top) + " (max_shape " + shape_string(spec.max_shape) + ")");
      }
    }
    if (rows >= 0 && shape[0] != rows) {
      return unfit("input '" + name + "' has " + std::to_string(shape[0]) +
                   " rows; the other inputs have " + std::to_string(rows));
    }
    rows = shape[0];
    const QJsonValue data = in.value("data");
    if (spec.dtype == DType::kBytes) {
      V2Input bytes{name, shape, Tensor(), {}};
      if (auto e = read_strings(bytes, data)) return *e;
      req.inputs[k] = std::move(bytes);
      continue;
    }
    const uint64_t n = count_values(data);
    // Every dimension < 2^53 and at most its largest, or the body bounds
    // the values: the product is checked against the values' count in 128
    // bits, saturating, before anything is allocated.
    unsigned __int128 needed = 1;
    for (int64_t d : shape) {
      needed *= static_cast<uint64_t>(d);
      if (needed > (static_cast<unsigned __int128>(1) << 64)) break;
    }
    if (n != needed) {
      return unfit("input '" + name + "' has " + std::to_string(n) + " values; shape " +
                   shape_string(shape) + " needs " + decimal(needed));
    }
    Tensor t(spec.dtype, shape);  // no larger than the values already in the body
    if (auto e = fill(t, data, name)) return *e;
    req.inputs[k] = V2Input{name, std::move(shape), std::move(t), {}};
  }
  for (size_t k = 0; k < seen.size(); ++k) {
    if (!seen[k]) return unfit("input '" + model.inputs[k].name + "' is missing");
  }
  if (obj->contains("outputs")) {
    if (!obj->value("outputs").isArray()) return malformed("'outputs' must be an array");
    for (const QJsonValue& ov : obj->value("outputs").toArray()) {
      if (!ov.isObject()) return malformed("each entry of 'outputs' must be an object");
      const std::string name = ov.toObject().value("name").toString().toStdString();
      bool known = false;
      for (const TensorSpec& s : model.outputs) known = known || s.name == name;
      if (!known) return unfit("model '" + model.name + "' has no output " + quoted_excerpt(name));
      if (std::find(req.outputs.begin(), req.outputs.end(), name) != req.outputs.end())
        return malformed("output '" + name + "' is requested twice");
      req.outputs.push_back(name);
    }
  }
  return req;
}

Tensors v2_row(const V2Request& req, int64_t row) {
  Tensors out;
  for (const V2Input& in : req.inputs) {
    if (!in.strings.empty()) {  // BYTES
      out.push_back(in.strings[static_cast<size_t>(row)]);
      continue;
    }
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
    case DType::kBytes: append_json_string(out, t.byte_string()); break;
  }
  out += ']';
}

Shape v2_output_shape(const TensorSpec& spec, size_t rows, const Tensor& first_row) {
  Shape shape{static_cast<int64_t>(rows)};
  if (spec.dtype == DType::kBytes) {
    if (spec.shape.size() == 2) shape.push_back(1);
    return shape;
  }
  shape.insert(shape.end(), first_row.shape().begin(), first_row.shape().end());
  return shape;
}

void append_v2_output(std::string& out, const TensorSpec& spec, const std::vector<Tensors>& rows,
                      size_t k) {
  out += "{\"name\":";
  append_json_string(out, spec.name);
  out += ",\"datatype\":";
  append_json_string(out, dtype_name(spec.dtype));
  out += ",\"shape\":[";
  // A row's own shape: a variable output cut to the request's length (every
  // row of one request has the same).
  const Shape shape = v2_output_shape(spec, rows.size(), rows.front()[k]);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) out += ',';
    append_int(out, shape[d]);
  }
  out += "],\"data\":[";
  std::string vals;
  for (size_t row = 0; row < rows.size(); ++row) {
    vals.clear();
    append_json_values(vals, rows[row][k]);
    if (row) out += ',';
    out.append(vals, 1, vals.size() - 2);  // without its brackets: one flat array
  }
  out += "]}";
}

}  // namespace batchscope
