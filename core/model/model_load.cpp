// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_load.h"

#include <atomic>
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

}  // namespace batchscope
