// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Refining a model's kept cost (tuning/cost_cache.h) with the runs the
// window records, off the GUI thread: measuring t(b) from a long run and
// rewriting the file take longer than a frame. A recording knows when each
// request arrived, not when it was meant to be sent, so its send lag is left
// out; its t(b), spread, answer times, turnaround and slow state count.
// Thread-safety: GUI thread only; the work runs on threads of its own,
// joined by the destructor (each at most one refinement long).

#include <memory>
#include <thread>
#include <vector>

#include "runs/run_record.h"
#include "tuning/cost_cache.h"

namespace batchscope {

class KeptCostRefiner {
 public:
  KeptCostRefiner() = default;
  KeptCostRefiner(const KeptCostRefiner&) = delete;
  KeptCostRefiner& operator=(const KeptCostRefiner&) = delete;
  ~KeptCostRefiner();

  // Refines the kept cost for `key` with `run` (its lanes as configured),
  // when there is one; nothing when none was made yet or no batch size ran
  // often enough.
  void refine(const CostKey& key, std::shared_ptr<const RunData> run);
  // Waits for the refinements under way.
  void wait();

 private:
  std::vector<std::thread> threads_;
};

}  // namespace batchscope
