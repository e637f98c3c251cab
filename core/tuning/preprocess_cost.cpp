// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/preprocess_cost.h"

#include "tuning/cost_checks.h"

namespace batchscope {

const std::vector<double>& PreprocessCost::pool_us(size_t busy) const {
  static const std::vector<double> kNone;
  if (pool.empty()) return kNone;
  const Pool* best = &pool.front();
  for (const Pool& p : pool) {
    if (p.busy <= busy) best = &p;
  }
  return best->us;
}

Status PreprocessCost::validate(const std::string& prefix) const {
  const std::string at = prefix + "preprocess.";
  if (Status s = cost_detail::check_quantiles(lane_us, "lane_us_quantiles", kMaxCostUs, at); !s) {
    return s;
  }
  uint32_t last = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    const std::string where = at + "pool[" + std::to_string(i) + "].";
    if (pool[i].busy <= last || pool[i].busy > kMaxCostLanes) {
      return invalid_argument(where + "busy = " + std::to_string(pool[i].busy) + " must be above " +
                              std::to_string(last) + " and at most " +
                              std::to_string(kMaxCostLanes));
    }
    last = pool[i].busy;
    if (pool[i].us.empty()) return invalid_argument(where + "us_quantiles is missing");
    if (Status s = cost_detail::check_quantiles(pool[i].us, "us_quantiles", kMaxCostUs, where);
        !s) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace batchscope
