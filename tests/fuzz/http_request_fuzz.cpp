// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: HttpParser, the listener's request parser. The input is what
// one client sends on one connection. It is fed whole, a byte at a time, and
// in pieces of varying size; the header promises the same requests and the
// same error whatever the split, so all three must agree. After each append
// the parser may hold no more than its limits allow, and a failed parser
// repeats its error.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "http/http_parser.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/split.h"

namespace {

using namespace batchscope;

// Small, so that short inputs reach every limit.
HttpLimits small_limits() {
  HttpLimits l;
  l.max_header_bytes = 512;
  l.max_body_bytes = 2048;
  l.max_header_fields = 8;
  return l;
}

// The longest line the parser may hold unparsed: a header line, or a
// chunk-size line (4 KiB in http_parser.cpp).
size_t max_unparsed(const HttpLimits& l) { return std::max<size_t>(l.max_header_bytes, 4096); }

struct Outcome {
  std::vector<HttpRequest> requests;
  std::optional<HttpParseError> error;
};

void check_request(const HttpRequest& r, const HttpLimits& l) {
  FUZZ_CHECK(!r.method.empty());
  FUZZ_CHECK(!r.target.empty());
  FUZZ_CHECK(r.version_minor >= 0 && r.version_minor <= 9);
  FUZZ_CHECK(r.headers.size() <= l.max_header_fields);
  FUZZ_CHECK(r.body.size() <= l.max_body_bytes);
  FUZZ_CHECK(r.method.size() + r.target.size() < l.max_header_bytes);
  for (const auto& [name, value] : r.headers) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
    FUZZ_CHECK(value.empty() || (value.front() != ' ' && value.back() != ' '));
  }
  FUZZ_CHECK(r.path().size() <= r.target.size());
}

// Calls next() until it asks for more, recording what came out.
void drain(HttpParser& p, Outcome& out, const HttpLimits& l) {
  while (!out.error) {
    auto r = p.next();
    if (std::holds_alternative<std::monostate>(r)) break;
    if (auto* e = std::get_if<HttpParseError>(&r)) {
      FUZZ_CHECK(p.failed());
      FUZZ_CHECK(p.buffered() == 0);
      FUZZ_CHECK(!e->message.empty());
      FUZZ_CHECK(e->status == 400 || e->status == 413 || e->status == 431 || e->status == 501 ||
                 e->status == 505);
      // A failed parser stays failed with the same error.
      auto again = p.next();
      auto* e2 = std::get_if<HttpParseError>(&again);
      FUZZ_CHECK(e2 != nullptr && e2->status == e->status && e2->message == e->message);
      out.error = std::move(*e);
      break;
    }
    HttpRequest& req = std::get<HttpRequest>(r);
    check_request(req, l);
    out.requests.push_back(std::move(req));
  }
  (void)p.take_continue();
  FUZZ_CHECK(p.buffered() <= max_unparsed(l));
}

template <class NextPiece>
Outcome feed(std::string_view data, const HttpLimits& l, NextPiece next_piece) {
  HttpParser p(l);
  Outcome out;
  while (!data.empty() && !out.error) {
    const size_t n = std::min(next_piece(), data.size());
    p.append(data.data(), n);
    data.remove_prefix(n);
    drain(p, out, l);
  }
  return out;
}

void check_same(const Outcome& a, const Outcome& b) {
  FUZZ_CHECK(a.requests.size() == b.requests.size());
  for (size_t i = 0; i < a.requests.size(); ++i) {
    const HttpRequest& x = a.requests[i];
    const HttpRequest& y = b.requests[i];
    FUZZ_CHECK(x.method == y.method);
    FUZZ_CHECK(x.target == y.target);
    FUZZ_CHECK(x.version_minor == y.version_minor);
    FUZZ_CHECK(x.headers == y.headers);
    FUZZ_CHECK(x.body == y.body);
    FUZZ_CHECK(x.keep_alive == y.keep_alive);
  }
  FUZZ_CHECK(a.error.has_value() == b.error.has_value());
  if (a.error) {
    FUZZ_CHECK(a.error->status == b.error->status);
    FUZZ_CHECK(a.error->message == b.error->message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  const HttpLimits l = small_limits();
  const Outcome whole = feed(data, l, [&] { return data.size(); });
  const Outcome bytewise = feed(data, l, [] { return size_t{1}; });
  fuzz::Splitter split(data, 64);
  const Outcome pieces = feed(data, l, [&] { return split.next(); });
  check_same(whole, bytewise);
  check_same(whole, pieces);
  // The listener's own limits, which short inputs only reach on the way.
  (void)feed(data, HttpLimits{}, [&] { return data.size(); });
  return 0;
}
