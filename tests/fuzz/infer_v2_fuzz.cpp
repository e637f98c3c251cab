// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_v2_request, the decoder of KServe v2 inference requests,
// against models of every datatype with one and several inputs. A request it
// accepts must have every input, rows first and the same rows throughout;
// each row (v2_row) must fit the model and write back as JSON. A BYTES
// input's strings, written back as a v2 output (append_v2_output), must be
// JSON that reads back to the same strings.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "api/infer_json.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/infer_models.h"

namespace {

using namespace batchscope;

// Row r of input k written as a BYTES output of the same shape, parsed back.
void check_bytes_round_trip(const V2Request& req, size_t k, const TensorSpec& spec) {
  const V2Input& in = req.inputs[k];
  std::vector<Tensors> rows;
  for (const Tensor& s : in.strings) rows.push_back(Tensors{s});
  TensorSpec out_spec = spec;
  out_spec.name = "out";
  std::string out;
  append_v2_output(out, out_spec, rows, 0);
  QJsonParseError pe{};
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(out), &pe);
  FUZZ_CHECK(pe.error == QJsonParseError::NoError && doc.isObject());
  const QJsonObject o = doc.object();
  FUZZ_CHECK(o.value("datatype").toString() == "BYTES");
  const QJsonArray shape = o.value("shape").toArray();
  FUZZ_CHECK(static_cast<size_t>(shape.size()) == spec.shape.size());
  FUZZ_CHECK(shape.at(0).toInteger() == in.rows());
  const QJsonArray data = o.value("data").toArray();
  FUZZ_CHECK(static_cast<size_t>(data.size()) == in.strings.size());
  for (size_t r = 0; r < in.strings.size(); ++r) {
    FUZZ_CHECK(data.at(static_cast<qsizetype>(r)).isString());
    // The strings came from JSON, so are UTF-8 already: they come back unchanged.
    FUZZ_CHECK(data.at(static_cast<qsizetype>(r)).toString().toStdString() ==
               in.strings[r].byte_string());
  }
}

void check_request(const V2Request& req, const ModelMetadata& m) {
  FUZZ_CHECK(req.inputs.size() == m.inputs.size());
  FUZZ_CHECK(req.has_id || req.id.empty());
  const int64_t rows = req.inputs.front().rows();
  FUZZ_CHECK(rows >= 1);
  for (size_t k = 0; k < req.inputs.size(); ++k) {
    const V2Input& in = req.inputs[k];
    const TensorSpec& spec = m.inputs[k];
    FUZZ_CHECK(in.name == spec.name);
    FUZZ_CHECK(in.rows() == rows);
    if (spec.dtype == DType::kBytes) {
      FUZZ_CHECK(in.shape == Shape{rows} || in.shape == (Shape{rows, 1}));
      FUZZ_CHECK(in.strings.size() == static_cast<size_t>(rows));
      for (const Tensor& s : in.strings) {
        FUZZ_CHECK(s.dtype() == DType::kBytes && s.shape().size() == 1);
        FUZZ_CHECK(s.nbytes() == s.byte_string().size());
      }
      check_bytes_round_trip(req, k, spec);
      continue;
    }
    FUZZ_CHECK(in.strings.empty());
    FUZZ_CHECK(in.tensor.dtype() == spec.dtype);
    Shape want = spec.item_shape();
    want.insert(want.begin(), rows);
    FUZZ_CHECK(in.tensor.shape() == want);
    FUZZ_CHECK(in.shape == want);
    std::string out;
    append_json_values(out, in.tensor);
    FUZZ_CHECK(out.size() >= 2 && out.front() == '[' && out.back() == ']');
  }
  for (const std::string& name : req.outputs) {
    bool known = false;
    for (const TensorSpec& s : m.outputs) known = known || s.name == name;
    FUZZ_CHECK(known);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const Tensors row = v2_row(req, r);
    FUZZ_CHECK(check_inputs(m, row));
    FUZZ_CHECK(request_length(m, row) == 0 || has_variable_inputs(m));
    for (const Tensor& t : row) {
      std::string out;
      append_json_values(out, t);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static const std::vector<ModelMetadata> models = fuzz::infer_models();
  const std::string_view body(reinterpret_cast<const char*>(bytes), size);
  for (const ModelMetadata& m : models) {
    auto r = parse_v2_request(body, m);
    if (const auto* e = std::get_if<HttpError>(&r)) {
      FUZZ_CHECK(e->status == 400 || e->status == 422);
      FUZZ_CHECK(!e->message.empty());
      continue;
    }
    check_request(std::get<V2Request>(r), m);
  }
  return 0;
}
