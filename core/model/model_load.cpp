// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_load.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>

namespace batchscope {

// The flag is atomic so that cancelled(), asked between every step, never
// waits; the mutex and condition serve wait_for() only.
struct CancelToken::State {
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable cv;
};

CancelToken::CancelToken() : state_(std::make_shared<State>()) {}

void CancelToken::cancel() const {
  {
    std::lock_guard g(state_->mu);
    state_->cancelled.store(true);
  }
  state_->cv.notify_all();
}

bool CancelToken::cancelled() const { return state_->cancelled.load(); }

bool CancelToken::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock g(state_->mu);
  return state_->cv.wait_for(g, timeout, [this] { return state_->cancelled.load(); });
}

double starting_rate(const LoadedModel& m, const Options& o, double most) {
  const double lanes = std::max(1u, o.num_lanes);
  // A lane's best items per second, and its time per item there.
  double per_lane = 0;
  for (const CostPoint& p : m.profile) {
    if (p.batch > o.max_batch_size || p.median_us <= 0) continue;
    per_lane = std::max(per_lane, p.batch * 1e6 / p.median_us);
  }
  double capacity = per_lane > 0 ? lanes * per_lane : 0;
  if (m.preprocess_us > 0 && capacity > 0) {
    if (o.preprocess_workers > 0) {
      capacity = std::min(capacity, o.preprocess_workers * 1e6 / m.preprocess_us);
    } else {
      capacity = lanes * 1e6 / (1e6 / per_lane + m.preprocess_us);
    }
  }
  if (!std::isfinite(capacity) || capacity <= 0) return most;
  const double half = capacity / 2;
  // Two significant digits, whole requests a second.
  const double step = std::max(1.0, std::pow(10.0, std::floor(std::log10(half)) - 1));
  return std::min(most, std::max(1.0, std::floor(half / step) * step));
}

}  // namespace batchscope
