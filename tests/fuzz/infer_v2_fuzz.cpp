// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_v2_request, the decoder of KServe v2 inference requests,
// against models of every datatype with one and several inputs. A request it
// accepts must have every input, rows first and the same rows throughout;
// each row (v2_row) must fit the model and write back as JSON.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "api/infer_json.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/infer_models.h"

namespace {

using namespace batchscope;

void check_request(const V2Request& req, const ModelMetadata& m) {
  FUZZ_CHECK(req.inputs.size() == m.inputs.size());
  FUZZ_CHECK(req.has_id || req.id.empty());
  const int64_t rows = req.inputs.front().tensor.shape().at(0);
  FUZZ_CHECK(rows >= 1);
  for (size_t k = 0; k < req.inputs.size(); ++k) {
    const V2Input& in = req.inputs[k];
    const TensorSpec& spec = m.inputs[k];
    FUZZ_CHECK(in.name == spec.name);
    FUZZ_CHECK(in.tensor.dtype() == spec.dtype);
    Shape want = spec.item_shape();
    want.insert(want.begin(), rows);
    FUZZ_CHECK(in.tensor.shape() == want);
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
