// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/read_watch.h"

#include "common/text_out.h"

namespace batchscope {

std::optional<std::string> ReadWatch::check(TimePoint now, HttpPhase phase, uint64_t body_bytes,
                                            uint64_t messages) {
  if (phase != phase_ || messages != messages_) {
    phase_ = phase;
    messages_ = messages;
    since_ = now;
  }
  const Duration elapsed = now - since_;
  if (phase == HttpPhase::kHead && elapsed >= t_.header_timeout) {
    std::string m = "the request line and headers did not arrive within ";
    append_number(m, to_ms(t_.header_timeout), "0");
    return m + " ms";
  }
  if (phase == HttpPhase::kBody && t_.min_body_rate > 0 && elapsed > t_.body_grace) {
    const double seconds = std::chrono::duration<double>(elapsed).count();
    const double rate = static_cast<double>(body_bytes) / seconds;
    if (rate < t_.min_body_rate) {
      std::string m = "the request body arrived at ";
      append_number(m, static_cast<double>(static_cast<int64_t>(rate)), "0");
      m += " bytes/s, below the minimum of ";
      append_number(m, t_.min_body_rate, "0");
      return m + " bytes/s";
    }
  }
  return std::nullopt;
}

}  // namespace batchscope
