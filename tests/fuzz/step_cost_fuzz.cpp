// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_step_cost_json, the reader of a generative model's
// `--cost FILE` (what `bench --cost-out` writes). A cost it accepts prices
// every step finitely and at least at 0, and comes back the same through
// step_cost_json.

#include <cmath>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_cost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto c = parse_step_cost_json(json);
  if (!c) {
    FUZZ_CHECK(!c.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(std::isfinite(c->step_us) && c->step_us >= 0);
  FUZZ_CHECK(std::isfinite(c->token_us) && c->token_us >= 0);
  FUZZ_CHECK(std::isfinite(c->prefill_token_us) && c->prefill_token_us >= 0);
  FUZZ_CHECK(std::isfinite(c->context_us) && c->context_us >= 0);
  FUZZ_CHECK(std::isfinite(c->between_us) && c->between_us >= 0);
  const GenStepCost cost = GenStepCost::of(*c);
  for (uint32_t d : {0u, 1u, 32u, 4096u}) {
    for (uint32_t p : {0u, 7u, 1u << 20}) {
      for (uint64_t context : {uint64_t{0}, uint64_t{1} << 20}) {
        FUZZ_CHECK(cost.of_step(d, p, context).count() >= 0);
      }
    }
  }
  for (double u : {0.0, 0.3, 0.999999}) {
    const double f = cost.factor_at(u);
    FUZZ_CHECK(std::isfinite(f) && f > 0);
  }
  auto back = parse_step_cost_json(step_cost_json(*c, "m", "cpu"));
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->step_us == c->step_us && back->token_us == c->token_us &&
             back->prefill_token_us == c->prefill_token_us && back->rows.size() == c->rows.size());
  FUZZ_CHECK(back->context_us == c->context_us && back->between_us == c->between_us &&
             back->spread.size() == c->spread.size() && back->grid.size() == c->grid.size());
  return 0;
}
