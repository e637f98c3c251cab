// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: parse_response, which reads what any server sends back to
// `batchscope bench --target URL`. The input is what a server sends on one
// connection. It is read as the load client reads it: responses one after
// another, then once more as if the server had closed. The answer for a
// prefix must agree with the answer for the whole (a prefix of a response
// asks for more; it never completes differently or fails where the whole
// succeeds), and nothing may exceed the limits.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <variant>

#include "http/http_response.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/split.h"

namespace {

using namespace batchscope;

void check_response(const ReceivedResponse& r, std::string_view in, const HttpResponseLimits& l) {
  FUZZ_CHECK(r.status >= 100 && r.status <= 999);
  FUZZ_CHECK(r.size > 0 && r.size <= in.size());
  FUZZ_CHECK(r.size <= l.max_response_bytes);
  FUZZ_CHECK(r.body.size() < r.size);
  if (r.status < 200 || r.status == 204 || r.status == 304) FUZZ_CHECK(r.body.empty());
}

bool same(const ReceivedResponse& a, const ReceivedResponse& b) {
  return a.status == b.status && a.body == b.body && a.keep_alive == b.keep_alive &&
         a.size == b.size;
}

// Prefixes of `in` against the answer for all of it.
void check_prefixes(std::string_view in, const HttpResponseParse& whole,
                    const HttpResponseLimits& l) {
  fuzz::Splitter split(in, std::max<size_t>(in.size(), 1));
  for (int i = 0; i < 6; ++i) {
    const size_t k = i == 0   ? in.size() / 2
                     : i == 1 ? in.size() - std::min<size_t>(in.size(), 1)
                              : split.next() - 1;
    const HttpResponseParse part = parse_response(in.substr(0, k), false, l);
    if (const auto* r = std::get_if<ReceivedResponse>(&whole)) {
      if (k >= r->size) {
        const auto* p = std::get_if<ReceivedResponse>(&part);
        FUZZ_CHECK(p != nullptr && same(*p, *r));
      } else {
        FUZZ_CHECK(std::holds_alternative<std::monostate>(part));
      }
    } else if (std::holds_alternative<std::monostate>(whole)) {
      FUZZ_CHECK(std::holds_alternative<std::monostate>(part));
    } else {
      FUZZ_CHECK(!std::holds_alternative<ReceivedResponse>(part));
    }
  }
}

void read_connection(std::string_view in, const HttpResponseLimits& l) {
  for (bool first = true;; first = false) {
    const HttpResponseParse r = parse_response(in, false, l);
    if (first) check_prefixes(in, r, l);
    if (const auto* e = std::get_if<HttpResponseError>(&r)) {
      FUZZ_CHECK(!e->message.empty());
      return;
    }
    if (std::holds_alternative<std::monostate>(r)) {
      // The server closes: a body without a length ends here.
      const HttpResponseParse at_eof = parse_response(in, true, l);
      if (const auto* last = std::get_if<ReceivedResponse>(&at_eof)) check_response(*last, in, l);
      return;
    }
    const ReceivedResponse& resp = std::get<ReceivedResponse>(r);
    check_response(resp, in, l);
    in.remove_prefix(resp.size);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  // Small limits, so that short inputs reach them; then the client's own.
  HttpResponseLimits small;
  small.max_head_bytes = 256;
  small.max_response_bytes = 1024;
  read_connection(data, small);
  read_connection(data, HttpResponseLimits{});
  return 0;
}
