// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BasicEngine, the planner: a strategy's slow work (the adaptive strategy's
// plans) on a thread of the engine's own, started with the first task, so
// that no lane stalls on it. Included through basic_engine_impl.h.

#include <utility>

#include "batching/basic_engine.h"

namespace batchscope {

template <class In, class Out>
void BasicEngine<In, Out>::hand_to_planner_locked(StrategyTask task) {
  if (stopping_) return;  // the strategy goes with the engine
  planner_task_ = std::move(task);
  planner_generation_ = strategy_generation_;
  planner_busy_ = true;
  if (planner_.joinable()) {
    planner_cv_.notify_one();
  } else {
    planner_ = std::thread([this] { planner_loop(); });
  }
}

template <class In, class Out>
void BasicEngine<In, Out>::planner_loop() {
  MutexLock lk(mu_);
  for (;;) {
    while (!(planner_exit_ || static_cast<bool>(planner_task_))) planner_cv_.wait(lk.unique());
    if (planner_exit_) return;
    StrategyTask task = std::move(planner_task_);
    planner_task_ = nullptr;
    const uint64_t generation = planner_generation_;
    lk.unlock();
    StrategyApply apply;
    try {
      apply = task();
    } catch (...) {  // out of memory while planning: the strategy goes without
    }
    task = nullptr;
    lk.lock();
    ++counters_.plans;
    if (apply && generation == strategy_generation_) {
      apply(*strategy_);
      wake_leader_locked();  // a parked leader decides again under the new limits
    }
    planner_busy_ = static_cast<bool>(planner_task_);
  }
}

}  // namespace batchscope
