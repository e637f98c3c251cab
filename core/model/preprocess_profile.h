// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a Python model's preprocess costs a request, measured on its class's
// examples (what seeded traffic sends) as the engine would run it:
//   - through a preprocess pool of k processes kept busy (k requests in
//     flight, each sent again as one comes back), for k = 1 .. `most`: each
//     request's time from hand-over to hand-back, the commands through the
//     shared-memory region included;
//   - in a lane (preprocess_workers 0): a lane's batch of raw requests
//     against the same batch already prepared, in turn; the difference over
//     the batch's size is what preparing one request adds.
// The result's preprocess_pool_us and preprocess_lane_us (torch/profile.h),
// which the predictor replays (tuning/preprocess_cost.h).
// Thread-safety: runs on the calling thread; the pool's processes and a
// lane's worker are started there and retired before it returns.

#include <cstdint>

#include "common/status.h"
#include "model/local_model.h"
#include "torch/profile.h"

namespace batchscope {

// `lane`: one lane of the model as the engine makes it (a raw request is
// prepared in it, one the pool gave back is not); null measures the pool
// alone. Does nothing for a model
// without preprocess, or whose class gives no examples. Errors: the pool
// or the lane failing.
Status profile_preprocess(const LocalModel& model, uint32_t most, double seconds_per_step,
                          std::unique_ptr<Runner> lane, ProfileResult& result);

}  // namespace batchscope
