// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: options_from_json, the reader of PUT /v1/config bodies and
// `serve --config` files. Options it accepts must be valid, and must come
// back unchanged through options_to_json and options_from_json again.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "api/options_json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  using namespace batchscope;
  const std::string_view json(reinterpret_cast<const char*>(bytes), size);
  auto o = options_from_json(json, Options{});
  if (!o) {
    FUZZ_CHECK(!o.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(o->validate());
  const std::string written = options_to_json(*o);
  auto back = options_from_json(written, Options{});
  if (!back) std::fprintf(stderr, "%s\n%s\n", written.c_str(), back.error().message.c_str());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(*back == *o);
  return 0;
}
