// SPDX-License-Identifier: GPL-3.0-or-later
// Fuzz target: SseReader, which reads what any server streams back to
// `batchscope bench --target URL`. The input is what a server sends for one
// request. It is fed whole, in random pieces and (when short) a byte at a
// time, then the connection closes: every way must give the same events,
// the same end (status, body, bytes used) or fail, and nothing may exceed
// the limits.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/sse.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/split.h"

namespace {

using namespace batchscope;

struct Outcome {
  std::vector<std::string> events;
  bool done = false;
  bool failed = false;
  int status = 0;
  std::string body;
  size_t used = 0;
  bool ended_at_close = false;  // done only once finish() was called
};

bool same(const Outcome& a, const Outcome& b) {
  return a.events == b.events && a.done == b.done && a.failed == b.failed && a.status == b.status &&
         a.body == b.body && a.ended_at_close == b.ended_at_close && (!a.done || a.used == b.used);
}

void check_step(const SseStep& s, const SseReader& r, const SseLimits& l, size_t fed) {
  FUZZ_CHECK(s.used <= fed);
  FUZZ_CHECK(!(s.done && !s.error.empty()));
  FUZZ_CHECK(s.error.empty() == !r.failed());
  FUZZ_CHECK(s.status == 0 || (s.status >= 200 && s.status <= 999));
  FUZZ_CHECK(s.body.size() <= l.max_body_bytes);
  FUZZ_CHECK(s.body.empty() || (s.done && !r.event_stream()));
  for (const std::string& e : s.events) FUZZ_CHECK(e.size() <= l.max_event_bytes);
}

// Feeds `in` in pieces of 1..max_piece bytes (max_piece 0: whole), then closes.
Outcome read(std::string_view in, const SseLimits& l, size_t max_piece) {
  SseReader r(l);
  Outcome o;
  auto take = [&](SseStep s, size_t fed) {
    check_step(s, r, l, fed);
    for (std::string& e : s.events) o.events.push_back(std::move(e));
    if (s.done && !o.done) o.body = std::move(s.body);
    o.done = s.done;
    o.failed = !s.error.empty();
    o.status = s.status;
    o.used += s.used;
  };
  fuzz::Splitter split(in, std::max<size_t>(max_piece, 1));
  for (size_t off = 0; off < in.size();) {
    const size_t n = max_piece == 0 ? in.size() : std::min(split.next(), in.size() - off);
    const bool was_done = r.done();
    take(r.feed(in.substr(off, n)), n);
    // Once ended, nothing more is used, and the body is not given again.
    if (was_done) FUZZ_CHECK(o.used <= off);
    off += n;
  }
  const bool before = o.done;
  take(r.finish(), 0);
  o.ended_at_close = o.done && !before;
  FUZZ_CHECK(o.done != o.failed);  // after the close: one or the other
  FUZZ_CHECK(o.used <= in.size());
  return o;
}

void check(std::string_view in, const SseLimits& l) {
  const Outcome whole = read(in, l, 0);
  FUZZ_CHECK(same(whole, read(in, l, 16)));
  FUZZ_CHECK(same(whole, read(in, l, std::max<size_t>(in.size() / 3, 1))));
  if (in.size() <= 4096) FUZZ_CHECK(same(whole, read(in, l, 1)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  // Small limits, so that short inputs reach them; then the client's own.
  SseLimits small;
  small.max_head_bytes = 256;
  small.max_event_bytes = 64;
  small.max_body_bytes = 128;
  small.max_total_bytes = 2048;
  check(data, small);
  check(data, SseLimits{});
  return 0;
}
