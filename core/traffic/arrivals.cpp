// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/arrivals.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>
#include <sstream>

#include "common/text_out.h"

namespace batchscope {

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kConstant: return "constant";
    case Pattern::kPoisson: return "poisson";
    case Pattern::kBurst: return "burst";
    case Pattern::kRamp: return "ramp";
    case Pattern::kStep: return "step";
    case Pattern::kSine: return "sine";
    case Pattern::kTrace: return "trace";
    case Pattern::kClosed: return "closed";
  }
  return "?";
}

std::optional<Pattern> parse_pattern(std::string_view name) {
  for (Pattern p : {Pattern::kConstant, Pattern::kPoisson, Pattern::kBurst, Pattern::kRamp,
                    Pattern::kStep, Pattern::kSine, Pattern::kTrace, Pattern::kClosed}) {
    if (name == pattern_name(p)) return p;
  }
  return std::nullopt;
}

namespace {

constexpr double kMaxRate = 1e9;       // req/s; far beyond what one generator can send
constexpr double kMaxDurationS = 1e7;  // keeps every offset well inside int64 nanoseconds
constexpr uint32_t kMaxConcurrency = 1'000'000;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kSinePieces = 64;  // even, so that the peak is a piece boundary

std::optional<Error> check_rate(const std::string& field, double v, bool positive) {
  if (std::isfinite(v) && v <= kMaxRate && (positive ? v > 0 : v >= 0)) return std::nullopt;
  return invalid_argument(field + " = " + message_number(v) + " req/s is out of range; allowed " +
                          (positive ? "above 0" : "0") + " to " + message_number(kMaxRate));
}

std::optional<Error> check_length(const std::string& field, double v, bool allow_zero) {
  if (std::isfinite(v) && (allow_zero ? v >= 0 : v > 0)) return std::nullopt;
  return invalid_argument(field + " = " + message_number(v) + " s must be a finite number " +
                          (allow_zero ? ">= 0" : "> 0"));
}

// Nanoseconds for a time in seconds known to be below the duration (<= 1e7 s).
// Truncated rather than rounded: an arrival just before a boundary (the end
// of a burst, of a step, of the run) stays before it.
int64_t floor_ns(double t_s) { return static_cast<int64_t>(t_s * 1e9); }

}  // namespace

Status ArrivalSpec::validate() const {
  if (!std::isfinite(duration_s) || duration_s <= 0 || duration_s > kMaxDurationS) {
    return invalid_argument("duration_s = " + message_number(duration_s) +
                            " s is out of range; allowed above 0 to " +
                            message_number(kMaxDurationS));
  }
  switch (pattern) {
    case Pattern::kConstant:
    case Pattern::kPoisson:
      if (auto e = check_rate("rate", rate, true)) return *e;
      return Status::Ok();
    case Pattern::kBurst:
      if (auto e = check_rate("rate", rate, false)) return *e;
      if (auto e = check_rate("rate_low", rate_low, false)) return *e;
      if (auto e = check_length("on_s", on_s, false)) return *e;
      if (auto e = check_length("off_s", off_s, true)) return *e;
      if (rate == 0 && rate_low == 0) {
        return invalid_argument("burst: rate and rate_low are both 0; no request would be sent");
      }
      return Status::Ok();
    case Pattern::kRamp:
      if (auto e = check_rate("rate_from", rate_from, false)) return *e;
      if (auto e = check_rate("rate_to", rate_to, false)) return *e;
      if (rate_from == 0 && rate_to == 0) {
        return invalid_argument("ramp: rate_from and rate_to are both 0; no request would be sent");
      }
      return Status::Ok();
    case Pattern::kStep: {
      if (steps.empty())
        return invalid_argument("steps is empty; step needs (rate, seconds) levels");
      bool any = false;
      for (size_t i = 0; i < steps.size(); ++i) {
        const std::string at = "steps[" + std::to_string(i) + "]";
        if (auto e = check_rate(at + ".rate", steps[i].first, false)) return *e;
        if (auto e = check_length(at + ".seconds", steps[i].second, false)) return *e;
        any = any || steps[i].first > 0;
      }
      if (!any) return invalid_argument("steps: every rate is 0; no request would be sent");
      return Status::Ok();
    }
    case Pattern::kSine:
      if (auto e = check_length("period_s", period_s, false)) return *e;
      if (auto e = check_rate("rate_min", rate_min, false)) return *e;
      if (auto e = check_rate("rate_max", rate_max, true)) return *e;
      if (rate_max < rate_min) {
        return invalid_argument("rate_max = " + message_number(rate_max) +
                                " is below rate_min = " + message_number(rate_min));
      }
      return Status::Ok();
    case Pattern::kTrace:
      if (trace.empty()) return invalid_argument("trace is empty; it needs at least one offset");
      if (!(trace_speed > 0 && trace_speed <= 1e6)) {
        return invalid_argument("trace_speed = " + message_number(trace_speed) +
                                " is out of range; allowed above 0 to 1000000");
      }
      for (size_t i = 0; i < trace.size(); ++i) {
        if (trace[i].count() < 0) {
          return invalid_argument("trace[" + std::to_string(i) +
                                  "] = " + message_number(to_us(trace[i])) + " us is negative");
        }
        if (i > 0 && trace[i] < trace[i - 1]) {
          return invalid_argument("trace[" + std::to_string(i) +
                                  "] = " + message_number(to_us(trace[i])) +
                                  " us is before trace[" + std::to_string(i - 1) +
                                  "] = " + message_number(to_us(trace[i - 1])) + " us");
        }
      }
      return Status::Ok();
    case Pattern::kClosed:
      if (concurrency < 1 || concurrency > kMaxConcurrency) {
        return invalid_argument("concurrency = " + std::to_string(concurrency) +
                                " is out of range; allowed 1 to " +
                                std::to_string(kMaxConcurrency));
      }
      return Status::Ok();
  }
  return invalid_argument("pattern = " + std::to_string(static_cast<int>(pattern)) +
                          " is unknown; allowed constant, poisson, burst, ramp, step, sine, "
                          "trace, closed");
}

std::string ArrivalSpec::describe() const {
  std::ostringstream s;
  s << pattern_name(pattern) << ' ';
  switch (pattern) {
    case Pattern::kConstant:
    case Pattern::kPoisson: s << "rate=" << message_number(rate) << "/s"; break;
    case Pattern::kBurst:
      s << "rate=" << message_number(rate) << "/s for " << message_number(on_s)
        << " s, rate_low=" << message_number(rate_low) << "/s for " << message_number(off_s)
        << " s,";
      break;
    case Pattern::kRamp:
      s << message_number(rate_from) << "/s to " << message_number(rate_to) << "/s";
      break;
    case Pattern::kStep:
      for (size_t i = 0; i < steps.size(); ++i) {
        s << (i ? ", " : "") << message_number(steps[i].first) << "/s x "
          << message_number(steps[i].second) << " s";
      }
      s << " (cycling)";
      break;
    case Pattern::kSine:
      s << message_number(rate_min) << "/s to " << message_number(rate_max) << "/s, period "
        << message_number(period_s) << " s,";
      break;
    case Pattern::kTrace:
      s << trace.size() << " offsets";
      if (trace_speed != 1) s << " at " << message_number(trace_speed) << "x speed";
      break;
    case Pattern::kClosed: s << "concurrency=" << concurrency; break;
  }
  s << " for " << message_number(duration_s) << " s";
  if (max_requests > 0) s << ", at most " << max_requests << " requests";
  return s.str();
}

// ---------------------------------------------------------------------------
// ArrivalSchedule

ArrivalSchedule::ArrivalSchedule(const ArrivalSpec& spec) : spec_(spec) {
  if (!spec_.validate().ok() || spec_.pattern == Pattern::kClosed) {
    done_ = true;
    return;
  }
  duration_ns_ = std::llround(spec_.duration_s * 1e9);
  if (spec_.pattern == Pattern::kTrace && spec_.trace_speed != 1) {
    // Scaled once here; each offset rounded alone, so the order holds.
    for (Duration& d : spec_.trace) {
      d = Duration(std::llround(static_cast<double>(d.count()) / spec_.trace_speed));
    }
  }

  // splitmix64 spreads any seed (0 included) over the whole xoshiro state.
  uint64_t x = spec_.seed;
  for (uint64_t& word : rng_) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    word = z ^ (z >> 31);
  }

  if (spec_.pattern == Pattern::kBurst) {
    segments_ = {{spec_.rate, spec_.on_s}, {spec_.rate_low, spec_.on_s + spec_.off_s}};
  } else if (spec_.pattern == Pattern::kStep) {
    double end = 0;
    for (const auto& [rate, seconds] : spec_.steps) {
      end += seconds;
      segments_.push_back({rate, end});
    }
  } else if (spec_.pattern == Pattern::kSine) {
    // Thinning envelope: the period in kSinePieces, each bounded by its own
    // maximum, so ~97% of candidates are kept instead of mean/peak (as low as
    // 1/2). The raised cosine is monotone on each half period and the pieces
    // split at the peak, so a piece's maximum is at one of its ends.
    const double piece = spec_.period_s / kSinePieces;
    for (int i = 0; i < kSinePieces; ++i) {
      const double bound = std::max(sine_rate(i * piece), sine_rate((i + 1) * piece));
      // The margin covers rounding in cos(), so the bound is never below the rate.
      segments_.push_back(
          {bound * (1 + 1e-9), i + 1 == kSinePieces ? spec_.period_s : (i + 1) * piece});
    }
  }
  double start = 0;
  for (const Segment& s : segments_) {
    cycle_mass_ += s.rate * (s.end_s - start);
    start = s.end_s;
  }
  cycle_s_ = start;
  if (spec_.pattern == Pattern::kRamp) {
    ramp_slope_ = (spec_.rate_to - spec_.rate_from) / spec_.duration_s;
  }
}

std::optional<Duration> ArrivalSchedule::next() {
  if (done_) return std::nullopt;
  if (spec_.max_requests > 0 && emitted_ >= spec_.max_requests) {
    done_ = true;
    return std::nullopt;
  }
  int64_t ns = duration_ns_;
  if (spec_.pattern == Pattern::kTrace) {
    if (index_ < spec_.trace.size()) ns = spec_.trace[index_++].count();
  } else if (spec_.pattern == Pattern::kConstant) {
    // k * 1e9 / rate in nanoseconds directly: one rounding, so offsets that are
    // whole nanoseconds (rate 1000: k ms) come out exact, with no drift.
    const double at_ns = static_cast<double>(index_++) * 1e9 / spec_.rate;
    if (at_ns < static_cast<double>(duration_ns_)) ns = static_cast<int64_t>(at_ns);
  } else {
    double t = 0;
    switch (spec_.pattern) {
      case Pattern::kPoisson: t = next_poisson(); break;
      case Pattern::kBurst:
      case Pattern::kStep: t = next_piecewise(); break;
      case Pattern::kRamp: t = next_ramp(); break;
      case Pattern::kSine: t = next_sine(); break;
      default: t = kInf; break;
    }
    // Compare in seconds first: infinity or a huge t must not reach the int64 cast.
    if (t < spec_.duration_s) ns = floor_ns(t);
  }
  if (ns >= duration_ns_) {
    done_ = true;
    return std::nullopt;
  }
  ++emitted_;
  return Duration(ns);
}

double ArrivalSchedule::next_poisson() {
  t_s_ += exp1() / spec_.rate;
  return t_s_;
}

// Inversion of the integrated rate: an Exp(1) amount of "mass" is spent
// segment by segment; zero-rate segments cost nothing and are crossed.
// Memorylessness makes restarting at each segment boundary exact.
double ArrivalSchedule::next_piecewise() {
  if (cycle_mass_ <= 0) return kInf;
  double e = exp1();
  for (;;) {
    const Segment& s = segments_[segment_];
    const double end = cycle_ * cycle_s_ + s.end_s;
    if (s.rate > 0) {
      const double room = (end - t_s_) * s.rate;
      if (e < room) {
        t_s_ = std::min(t_s_ + e / s.rate, end);
        return t_s_;
      }
      e -= room;
    }
    t_s_ = end;
    if (++segment_ == segments_.size()) {
      segment_ = 0;
      cycle_ += 1;
      // A gap longer than whole cycles (tiny segments, low rates) skips them
      // in one step, so the walk per arrival is bounded by one cycle.
      if (e >= cycle_mass_) {
        const double whole = std::floor(e / cycle_mass_);
        cycle_ += whole;
        e = std::max(0.0, e - whole * cycle_mass_);
      }
      t_s_ = cycle_ * cycle_s_;
    }
    if (t_s_ >= spec_.duration_s) return t_s_;
  }
}

// Integrated rate from t0: r0*s + slope*s^2/2 = e, with r0 the rate at t0.
// s = 2e / (r0 + sqrt(r0^2 + 2*slope*e)) is the cancellation-free root.
double ArrivalSchedule::next_ramp() {
  const double e = exp1();
  const double r0 = spec_.rate_from + ramp_slope_ * t_s_;
  const double disc = r0 * r0 + 2 * ramp_slope_ * e;
  // A falling ramp whose remaining mass is below e: no more arrivals.
  if (disc < 0) return kInf;
  const double denom = r0 + std::sqrt(disc);
  if (!(denom > 0)) return kInf;
  t_s_ += 2 * e / denom;
  return t_s_;
}

// Thinning: candidates from a Poisson process at the piecewise envelope, each
// kept with probability rate(t) / envelope(t). Exact, and needed because the
// sine's integrated rate has no closed-form inverse.
double ArrivalSchedule::next_sine() {
  for (;;) {
    const double t = next_piecewise();
    if (t >= spec_.duration_s) return t;
    if (uniform() * segments_[segment_].rate < sine_rate(t)) return t;
  }
}

double ArrivalSchedule::sine_rate(double t_s) const {
  const double phase = 2 * std::numbers::pi * t_s / spec_.period_s;
  return spec_.rate_min + (spec_.rate_max - spec_.rate_min) * (1 - std::cos(phase)) / 2;
}

double ArrivalSchedule::piecewise_rate(double t_s) const {
  if (segments_.empty() || cycle_s_ <= 0) return 0;
  const double phase = std::fmod(t_s, cycle_s_);
  auto it = std::upper_bound(segments_.begin(), segments_.end(), phase,
                             [](double p, const Segment& s) { return p < s.end_s; });
  return it == segments_.end() ? segments_.back().rate : it->rate;
}

double ArrivalSchedule::rate_at(Duration t) const {
  if (t.count() < 0 || t.count() >= duration_ns_) return 0;
  const double t_s = static_cast<double>(t.count()) * 1e-9;
  switch (spec_.pattern) {
    case Pattern::kConstant:
    case Pattern::kPoisson: return spec_.rate;
    case Pattern::kBurst:
    case Pattern::kStep: return piecewise_rate(t_s);
    case Pattern::kRamp: return spec_.rate_from + ramp_slope_ * t_s;
    case Pattern::kSine: return sine_rate(t_s);
    case Pattern::kTrace: {
      const auto& tr = spec_.trace;
      const Duration half = std::chrono::milliseconds(500);
      auto lo = std::lower_bound(tr.begin(), tr.end(), t - half);
      // Offsets at or after the duration are never sent, so they do not count.
      auto hi = std::lower_bound(tr.begin(), tr.end(), std::min(t + half, Duration(duration_ns_)));
      return static_cast<double>(hi - lo);
    }
    case Pattern::kClosed: return 0;
  }
  return 0;
}

double ArrivalSchedule::uniform() {
  // xoshiro256**: fast, 256-bit state, passes BigCrush; written out so the
  // stream is identical with every standard library.
  const uint64_t result = std::rotl(rng_[1] * 5, 7) * 9;
  const uint64_t t = rng_[1] << 17;
  rng_[2] ^= rng_[0];
  rng_[3] ^= rng_[1];
  rng_[1] ^= rng_[2];
  rng_[0] ^= rng_[3];
  rng_[2] ^= t;
  rng_[3] = std::rotl(rng_[3], 45);
  // 53 random bits centred in their cell: never exactly 0 or 1, so log() and
  // the ramp's root stay finite and positive.
  return (static_cast<double>(result >> 11) + 0.5) * 0x1.0p-53;
}

double ArrivalSchedule::exp1() { return -std::log(uniform()); }

}  // namespace batchscope
