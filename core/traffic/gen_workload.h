// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a generation benchmark asks for: each request's prompt length and
// max_tokens, drawn from a distribution (fixed, uniform, or lognormal with
// an upper cap, which gives the long tail real traffic has) or replayed
// from a CSV trace, and its prompt text, cut from an English passage at a
// seeded offset. Seeded and our own transforms (xoshiro256** and
// Box-Muller), so a spec gives the same requests on every platform.
// Thread-safety: plain values; a GenWorkload is owned by one thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace batchscope {

struct LengthDist {
  enum class Kind : uint8_t { kFixed, kUniform, kLognormal };
  Kind kind = Kind::kFixed;
  double a = 16;   // fixed: the value; uniform: low; lognormal: the median
  double b = 0;    // uniform: high; lognormal: sigma (of the log)
  double cap = 0;  // lognormal: largest value (0: none)

  // "fixed:N", "uniform:LO,HI", "lognormal:MEDIAN,SIGMA[,MAX]"; `flag` names
  // it in errors.
  static Expected<LengthDist> parse(std::string_view text, std::string_view flag);
  std::string describe() const;
};

struct GenLengths {
  uint32_t prompt = 0;
  uint32_t max_tokens = 0;
};

// "prompt_tokens,max_tokens" per line, a header line allowed; errors name the line.
Expected<std::vector<GenLengths>> parse_lengths_csv(std::string_view text);

class GenWorkload {
 public:
  GenWorkload(LengthDist prompt, LengthDist max_tokens, uint64_t seed);
  // Replays `trace` in order, cycling.
  GenWorkload(std::vector<GenLengths> trace, uint64_t seed);

  GenLengths next();
  // A prompt of `n` bytes of English text (a seeded window of a passage).
  std::string prompt_text(uint32_t n);

 private:
  uint32_t draw(const LengthDist& d);
  double uniform();

  LengthDist prompt_, max_tokens_;
  std::vector<GenLengths> trace_;
  size_t index_ = 0;
  uint64_t s_[4] = {};
};

}  // namespace batchscope
