// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Traffic arrival processes for the open-loop load generator: given a pattern
// (constant, Poisson, bursts, a ramp, steps, a compressed daily sine, a
// recorded trace) an ArrivalSchedule yields the intended send offsets from the
// run's start, one at a time, so a generator can send each request at its time
// whether or not earlier ones have been answered. Open loop matters: a closed
// loop slows down with the server and hides the queueing it is meant to show.
//
// Behaviour: pure and seeded. The same spec (seed included) gives the same
// offsets on every run and platform: the generator is our own xoshiro256**
// and the transforms are our own, not std::*_distribution, whose output is
// left to each standard library. Random patterns use exact methods (no time
// discretisation): piecewise-constant rates by inverting the integrated rate
// segment by segment, the ramp by solving its quadratic integrated rate, the
// sine by thinning against a piecewise-constant envelope. Stretches at rate 0
// are crossed without division by zero. Each next() costs O(1) amortised
// (step: at most one walk of the step list, as whole cycles are skipped at
// once), about 5-60 ns.
//
// Thread-safety: ArrivalSpec is a plain value. An ArrivalSchedule is owned by
// one thread (the generator's); next() mutates it. rate_at() is const.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace batchscope {

enum class Pattern : uint8_t {
  kConstant,  // evenly spaced at 1/rate, first at t = 0
  kPoisson,   // exponential gaps with mean 1/rate, first after one gap
  kBurst,     // Poisson at rate for on_s, then at rate_low for off_s, repeating
  kRamp,      // Poisson with rate linear from rate_from (t = 0) to rate_to (t = duration)
  kStep,      // Poisson at each (rate, seconds) level in order, cycling
  kSine,      // Poisson with a raised-cosine rate: trough rate_min at t = 0
  kTrace,     // replays recorded offsets
  kClosed,    // no schedule: the generator keeps `concurrency` requests in flight
};

const char* pattern_name(Pattern p);
// "constant", "poisson", "burst", "ramp", "step", "sine", "trace", "closed".
std::optional<Pattern> parse_pattern(std::string_view name);

// Rates are in requests per second, lengths in seconds. Only the fields of the
// chosen pattern (plus duration_s, max_requests, seed) are read or validated.
struct ArrivalSpec {
  Pattern pattern = Pattern::kPoisson;
  // constant, poisson: the rate; burst: the rate during "on" periods.
  // Range 0..1e9 (constant, poisson: above 0).
  double rate = 100;
  // burst: the rate during "off" periods; 0 means silence. Range 0..1e9.
  double rate_low = 0;
  // burst: length of an "on" period (> 0) and an "off" period (>= 0); on first.
  double on_s = 1, off_s = 1;
  // ramp: rate at t = 0 and at t = duration_s, linear between. Range 0..1e9,
  // not both 0.
  double rate_from = 10, rate_to = 100;
  // step: (rate 0..1e9, seconds > 0) levels in order; the list repeats if the
  // run is longer than their sum. Not empty, not all rates 0.
  std::vector<std::pair<double, double>> steps;
  // sine: one "day" compressed into this many seconds (> 0).
  double period_s = 60;
  // sine: trough (at t = 0, period_s, ...) and peak (at period_s / 2).
  // 0 <= rate_min <= rate_max <= 1e9, rate_max > 0.
  double rate_min = 10, rate_max = 100;
  // trace: send offsets from the start, >= 0 and non-decreasing, not empty.
  std::vector<Duration> trace;
  // trace: replay speed; 2 sends each request at half its offset. (0, 1e6].
  double trace_speed = 1;
  // closed: requests kept in flight. Range 1..1,000,000.
  uint32_t concurrency = 1;
  // The run's length: no arrival at or after it. Range (0, 1e7] seconds.
  double duration_s = 10;
  // Stop after this many arrivals, for every pattern (0: no limit).
  uint64_t max_requests = 0;
  // Seeds the random patterns; any value.
  uint64_t seed = 1;

  // Ok, or kInvalidArgument naming the bad field, its value and what is allowed.
  Status validate() const;
  // One line for logs: "poisson rate=2000/s for 10 s",
  // "burst rate=5000/s for 0.5 s, rate_low=0/s for 1.5 s, for 60 s", ...
  std::string describe() const;
};

// The intended send offsets of one run, in non-decreasing order. The count
// over a run is random except for constant (ceil(duration_s * rate) arrivals:
// floor(duration_s * rate) when the product is a whole number, as the one at
// exactly duration_s is excluded) and trace. Offsets are truncated to the
// nanosecond.
class ArrivalSchedule {
 public:
  // `spec` must be valid (validate().ok()); an invalid one gives an empty
  // schedule rather than undefined behaviour. closed: next() is always nullopt.
  explicit ArrivalSchedule(const ArrivalSpec& spec);

  // The next offset from the run's start, or nullopt once the run is over
  // (duration reached, max_requests sent, trace exhausted). Stays nullopt.
  std::optional<Duration> next();

  // The rate the pattern intends at offset t, in req/s, for plots and tests;
  // 0 outside [0, duration). trace: arrivals in the 1 s window centred on t.
  // closed: 0. max_requests is not taken into account.
  double rate_at(Duration t) const;

  // Arrivals handed out so far.
  uint64_t emitted() const { return emitted_; }

 private:
  // A level of a piecewise-constant rate, positioned within one cycle.
  struct Segment {
    double rate;
    double end_s;  // offset of the segment's end from the cycle's start
  };

  // Pattern-specific: the next arrival time in seconds; any value >= the
  // duration (or infinity) ends the run.
  double next_poisson();
  double next_piecewise();
  double next_ramp();
  double next_sine();

  double sine_rate(double t_s) const;
  double piecewise_rate(double t_s) const;

  // Uniform in the open interval (0, 1) and an Exp(1) variate.
  double uniform();
  double exp1();

  ArrivalSpec spec_;
  int64_t duration_ns_ = 0;
  bool done_ = false;
  uint64_t emitted_ = 0;
  uint64_t index_ = 0;  // constant: arrivals so far; trace: next offset to replay
  double t_s_ = 0;      // time of the last arrival or candidate, in seconds

  // burst and step: the rate levels; sine: the thinning envelope.
  std::vector<Segment> segments_;
  double cycle_s_ = 0;     // length of one pass through segments_
  double cycle_mass_ = 0;  // expected arrivals in one pass
  double cycle_ = 0;       // passes completed; a double so huge skips cannot overflow
  size_t segment_ = 0;     // current segment within the pass

  double ramp_slope_ = 0;  // ramp: d(rate)/dt, req/s per second
  uint64_t rng_[4] = {};   // xoshiro256** state
};

}  // namespace batchscope
