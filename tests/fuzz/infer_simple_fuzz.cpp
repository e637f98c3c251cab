// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_simple_infer, the decoder of POST /infer bodies
// ({"data": [...]}), against models of every datatype. A body it accepts
// must fit the model (check_inputs agrees) and write back as JSON.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "api/infer_json.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/infer_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  static const std::vector<ModelMetadata> models = fuzz::infer_models();
  const std::string_view body(reinterpret_cast<const char*>(bytes), size);
  for (const ModelMetadata& m : models) {
    auto r = parse_simple_infer(body, m);
    if (const auto* e = std::get_if<HttpError>(&r)) {
      FUZZ_CHECK(e->status == 400 || e->status == 422);
      FUZZ_CHECK(!e->message.empty());
      continue;
    }
    const Tensors& in = std::get<Tensors>(r);
    FUZZ_CHECK(m.inputs.size() == 1 && in.size() == 1);
    FUZZ_CHECK(in[0].dtype() == m.inputs[0].dtype);
    FUZZ_CHECK(in[0].shape() == m.inputs[0].item_shape());
    FUZZ_CHECK(check_inputs(m, in));
    std::string out;
    append_json_values(out, in[0]);
    FUZZ_CHECK(out.size() >= 2 && out.front() == '[' && out.back() == ']');
  }
  return 0;
}
