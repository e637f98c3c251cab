// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_model_config, the reader of a Hugging Face config.json
// (`--model-config`). A shape it accepts has every size in range, counts
// its parameters and KV bytes finitely, and describes itself.

#include <cmath>
#include <cstdint>
#include <string_view>

#include "roofline/model_shape.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto s = parse_model_config(json, "fuzz");
  if (!s) {
    FUZZ_CHECK(!s.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(s->hidden >= 1 && s->layers >= 1 && s->heads >= 1 && s->head_dim >= 1);
  FUZZ_CHECK(s->kv_heads >= 1 && s->kv_heads <= s->heads && s->heads % s->kv_heads == 0);
  FUZZ_CHECK(s->parameters() >= s->matmul_parameters() || s->tied_embeddings);
  FUZZ_CHECK(std::isfinite(s->kv_bytes_per_token("bf16")) && s->kv_bytes_per_token("bf16") > 0);
  FUZZ_CHECK(std::isfinite(s->flops_per_token()) && s->flops_per_token() > 0);
  FUZZ_CHECK(!s->describe().empty());
  return 0;
}
