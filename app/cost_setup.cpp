// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cost_setup.h"

#include <cstdio>

#include "batching/synthetic_runner.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/profile.h"
#endif

namespace batchscope {

Expected<CostModel> load_cost_model(const ModelChoice& model, const std::string& cost_file,
                                    uint32_t max_batch, const char* command) {
  if (!cost_file.empty()) {
    auto m = CostModel::from_file(cost_file);
    if (!m) return invalid_argument("--cost: " + m.error().message);
    if (const std::string u = m->unsettled(); !u.empty()) {
      std::fprintf(stderr,
                   "%s: warning: %s was profiled on a busy machine; t(b) did not settle at %s, "
                   "so predictions there are not to be trusted\n",
                   command, cost_file.c_str(), u.c_str());
    }
    return m;
  }
  if (model.synthetic) return CostModel::from_synthetic(*model.synthetic, max_batch);
#ifdef BATCHSCOPE_WITH_TORCH
  std::printf(
      "%s: measuring t(b) of %s up to b = %u (as batchscope profile does; --cost FILE "
      "reads a saved profile instead)\n",
      command, model.path.c_str(), max_batch);
  std::fflush(stdout);
  ProfileOptions p;
  p.device = model.device;
  p.max_batch = max_batch;
  auto r = profile_model(model.path, p);
  if (!r) return r.error();
  if (!r->settled) {
    std::fprintf(stderr,
                 "%s: warning: t(b) did not settle at %s; predictions there are not to be "
                 "trusted (profile again on a quiet machine)\n",
                 command, unsettled_text(r->points).c_str());
  }
  return CostModel::from_profile_json(profile_json(*r));
#else
  (void)command;
  return invalid_argument("measuring a model needs LibTorch; give --cost FILE or --synthetic");
#endif
}

}  // namespace batchscope
