// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/kept_cost_refiner.h"

namespace batchscope {

KeptCostRefiner::~KeptCostRefiner() { wait(); }

void KeptCostRefiner::wait() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void KeptCostRefiner::refine(const CostKey& key, std::shared_ptr<const RunData> run) {
  const std::string dir = cost_cache_dir();
  if (dir.empty() || !run) return;
  threads_.emplace_back([key, run = std::move(run), path = cost_cache_path(key, dir)] {
    const uint32_t lanes = std::max<uint32_t>(run->config.options.num_lanes, 1);
    auto seen = CostModel::from_run(*run, 5, lanes);
    if (!seen) return;
    auto without_lag = seen->with_send_lag({});
    if (!without_lag) return;
    (void)refine_cached_cost(path, key, *without_lag, lanes, run->others ? &*run->others : nullptr);
  });
}

}  // namespace batchscope
