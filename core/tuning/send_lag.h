// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How late the load driver sends, as a live run measured it, for the
// predictor to replay. On a small machine the driver's thread waits for a
// core while the lanes hold them; it then sends everything due at once, so
// lateness comes in stalls, the requests of one stall arrive together and
// form larger batches than on-time arrivals would. How often a stall starts
// depends on how many lanes are running batches (longer batches hold the
// cores longer) and on whether a lane is parked on a timer, waiting out
// max_wait for a batch to fill: measured here, a wait of 0.5 ms made stalls
// ten times as frequent as no wait at the same load (the timers' wake-ups
// on a virtual machine's cores). Both follow the configuration.
//
// The model:
//  - base: the lag of a request sent outside a stall (quantiles, a few tens
//    of microseconds: the driver's own wake-up);
//  - stalls, by the state when a request was meant to go (the lanes running
//    batches, and whether a lane was parked on a timer: requests queued and
//    a lane free): how many start per second spent in that state, and how
//    long each lasts from the first request it delays (quantiles).
// A request meant to go at t while a stall lasts goes when it ends; else a
// stall starts before it with the probability its state's rate gives over
// the time since the request before; else it goes after a base draw. Sends
// stay in order.
//
// Measured from a run's requests and batches (measure_send_lag): a stall
// starts at a request later than `kStallLagUs` (and four times the median
// lag) whose predecessor was sent before it was meant to go; it lasts that
// request's lag.
// Thread-safety: SendLagModel is a value; a SendLagDraw belongs to one
// simulation.

#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "runs/run_record.h"

namespace batchscope {

// The least lag that counts as a stall, in microseconds.
inline constexpr double kStallLagUs = 200;

struct SendLagModel {
  struct Stalls {
    double per_s = 0;             // stalls starting per second spent with this many lanes busy
    std::vector<double> us = {};  // how long each lasts (quantiles); empty when none started
    bool operator==(const Stalls&) const = default;
  };
  std::vector<double> base_us;  // quantiles; empty: no lag measured
  std::vector<Stalls> by_busy;  // index: lanes running batches (0, 1, ...), no lane on a timer
  std::vector<Stalls> waiting;  // the same with a lane parked on a timer
  bool empty() const { return base_us.empty(); }
  bool operator==(const SendLagModel&) const = default;
};

// The model measured from a live run (its requests in send order and its
// batches); empty when the run sent fewer than 50 requests.
SendLagModel measure_send_lag(const RunData& run);

// `was` (weight w) and `now` (weight n) averaged: quantiles point by point
// where both hold as many, rates by weight; `now` where `was` is empty.
SendLagModel merged(const SendLagModel& was, uint64_t w, const SendLagModel& now, uint64_t n);

// Draws each request's send time for the predictor.
class SendLagDraw {
 public:
  SendLagDraw(const SendLagModel& model, uint64_t seed);
  // When a request meant to go at `intended` goes, with `busy` lanes
  // running then and (`timed`) a lane parked on a timer or not; never
  // before `last_sent`.
  TimePoint send(TimePoint intended, size_t busy, bool timed, TimePoint last_sent);

 private:
  double uniform();  // [0, 1)
  const SendLagModel& m_;
  uint64_t state_;
  TimePoint stall_end_{};
  TimePoint last_intended_{};
  bool started_ = false;
};

}  // namespace batchscope
