// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/gen_workload.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace batchscope {

namespace {

// A passage to cut prompts from (public domain, Genesis 1:1-5, KJV).
constexpr std::string_view kPassage =
    "In the beginning God created the heaven and the earth. And the earth was without form, "
    "and void; and darkness was upon the face of the deep. And the Spirit of God moved upon "
    "the face of the waters. And God said, Let there be light: and there was light. And God "
    "saw the light, that it was good: and God divided the light from the darkness. And God "
    "called the light Day, and the darkness he called Night. And the evening and the morning "
    "were the first day. ";

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Expected<double> number(std::string_view text, std::string_view flag) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0) {
    return invalid_argument(std::string(flag) + ": expected a number >= 0, got '" +
                            std::string(text) + "'");
  }
  return v;
}

std::string shortest(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

Expected<LengthDist> LengthDist::parse(std::string_view text, std::string_view flag) {
  const std::string f(flag);
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  std::vector<double> v;
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    while (true) {
      const size_t comma = rest.find(',');
      auto x = number(rest.substr(0, comma), f);
      if (!x) return x.error();
      v.push_back(*x);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  LengthDist d;
  const auto want = [&](size_t lo, size_t hi, const char* form) -> Status {
    if (v.size() < lo || v.size() > hi) {
      return invalid_argument(f + ": expected " + form + ", got '" + std::string(text) + "'");
    }
    return Status::Ok();
  };
  if (kind == "fixed") {
    if (Status s = want(1, 1, "fixed:N"); !s) return s.error();
    d = {Kind::kFixed, v[0], 0, 0};
  } else if (kind == "uniform") {
    if (Status s = want(2, 2, "uniform:LO,HI"); !s) return s.error();
    if (v[0] > v[1]) return invalid_argument(f + ": uniform's low is above its high");
    d = {Kind::kUniform, v[0], v[1], 0};
  } else if (kind == "lognormal") {
    if (Status s = want(2, 3, "lognormal:MEDIAN,SIGMA[,MAX]"); !s) return s.error();
    d = {Kind::kLognormal, v[0], v[1], v.size() > 2 ? v[2] : 0};
  } else {
    return invalid_argument(f + ": unknown distribution '" + std::string(kind) +
                            "'; use fixed:N, uniform:LO,HI or lognormal:MEDIAN,SIGMA[,MAX]");
  }
  if (d.a < 1 && d.kind != Kind::kUniform)
    return invalid_argument(f + ": the value must be at least 1");
  return d;
}

std::string LengthDist::describe() const {
  switch (kind) {
    case Kind::kFixed: return "fixed " + shortest(a);
    case Kind::kUniform: return "uniform " + shortest(a) + ".." + shortest(b);
    case Kind::kLognormal:
      return "lognormal median " + shortest(a) + " sigma " + shortest(b) +
             (cap > 0 ? " max " + shortest(cap) : "");
  }
  return "?";
}

Expected<std::vector<GenLengths>> parse_lengths_csv(std::string_view text) {
  std::vector<GenLengths> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t comma = line.find(',');
    uint32_t p = 0, m = 0;
    const auto read = [](std::string_view s, uint32_t& v) {
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc() && end == s.data() + s.size() && v >= 1;
    };
    const bool ok = comma != std::string_view::npos && read(line.substr(0, comma), p) &&
                    read(line.substr(comma + 1, line.find(',', comma + 1) - comma - 1), m);
    if (!ok) {
      if (out.empty() && line_no == 1) continue;  // a header
      return invalid_argument("lengths trace line " + std::to_string(line_no) +
                              ": expected PROMPT_TOKENS,MAX_TOKENS (whole numbers >= 1)");
    }
    out.push_back({p, m});
  }
  if (out.empty()) return invalid_argument("the lengths trace has no rows");
  return out;
}

GenWorkload::GenWorkload(LengthDist prompt, LengthDist max_tokens, uint64_t seed)
    : prompt_(prompt), max_tokens_(max_tokens) {
  uint64_t z = seed;
  for (uint64_t& s : s_) {  // splitmix64 seeding
    z += 0x9E3779B97F4A7C15ull;
    uint64_t x = z;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    s = x ^ (x >> 31);
  }
}

GenWorkload::GenWorkload(std::vector<GenLengths> trace, uint64_t seed)
    : GenWorkload(LengthDist{}, LengthDist{}, seed) {
  trace_ = std::move(trace);
}

double GenWorkload::uniform() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return (static_cast<double>(result >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
}

uint32_t GenWorkload::draw(const LengthDist& d) {
  double v = d.a;
  if (d.kind == LengthDist::Kind::kUniform) {
    v = std::floor(d.a + uniform() * (d.b - d.a + 1));
    v = std::min(v, d.b);
  } else if (d.kind == LengthDist::Kind::kLognormal) {
    const double z = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
    v = std::round(d.a * std::exp(d.b * z));
    if (d.cap > 0) v = std::min(v, d.cap);
  }
  return static_cast<uint32_t>(std::clamp(v, 1.0, 1e7));
}

GenLengths GenWorkload::next() {
  if (!trace_.empty()) return trace_[index_++ % trace_.size()];
  const uint32_t p = draw(prompt_);
  return {p, draw(max_tokens_)};
}

std::string GenWorkload::prompt_text(uint32_t n) {
  std::string out;
  out.reserve(n);
  size_t at = static_cast<size_t>(uniform() * static_cast<double>(kPassage.size()));
  while (out.size() < n) {
    out.push_back(kPassage[at % kPassage.size()]);
    ++at;
  }
  return out;
}

}  // namespace batchscope
