// SPDX-License-Identifier: GPL-3.0-or-later
// t(b) of a model of any kind, measured through the runners its lanes run:
// a TorchScript file's TorchModels (torch/profile.h's profile_model), or a
// Python model's worker processes, the shared-memory path included.
// Thread-safety: runs on the calling thread; a Python model's workers are
// started there.

#pragma once

#include "common/status.h"
#include "model/local_model.h"
#include "torch/profile.h"

namespace batchscope {

Expected<ProfileResult> profile_choice(const ModelChoice& choice, const ProfileOptions& options);

}  // namespace batchscope
