// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_gpu_spec, the reader of `--gpu-spec FILE`. A GPU it
// accepts has every figure positive and finite, and comes back the same
// through gpu_spec_json.

#include <cmath>
#include <cstdint>
#include <string_view>

#include "roofline/gpu_table.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto g = parse_gpu_spec(json, "fuzz");
  if (!g) {
    FUZZ_CHECK(!g.error().message.empty());
    return 0;
  }
  for (double v : {g->memory_gb, g->bandwidth_gbs, g->tflops_bf16, g->tflops_fp16}) {
    FUZZ_CHECK(std::isfinite(v) && v > 0);
  }
  FUZZ_CHECK(std::isfinite(g->tflops_fp8) && g->tflops_fp8 >= 0);
  auto back = parse_gpu_spec(gpu_spec_json(*g), "again");
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->name == g->name && back->memory_gb == g->memory_gb &&
             back->bandwidth_gbs == g->bandwidth_gbs && back->tflops_fp8 == g->tflops_fp8 &&
             back->interconnect_gbs == g->interconnect_gbs &&
             back->constants.has_value() == g->constants.has_value());
  if (g->constants) {
    FUZZ_CHECK(g->constants->compute_efficiency > 0 && g->constants->compute_efficiency <= 1);
    FUZZ_CHECK(g->constants->memory_efficiency > 0 && g->constants->memory_efficiency <= 1);
    FUZZ_CHECK(back->constants->overhead_us == g->constants->overhead_us);
  }
  return 0;
}
