// SPDX-License-Identifier: GPL-3.0-or-later
// The loader the workbench's model panel runs: a TorchScript file with its
// sidecar, or the synthetic stand-in, made ready for the engine and measured.
//
// For a TorchScript model it reads the sidecar, loads one instance per lane
// of the request and warms each up (the returned factory hands these warm
// instances to the engine's lanes, and loads fresh ones for lanes added
// later), then measures the cost profile t(b) for b = 1, 2, 4, ... up to
// min(the model's maximum, 256) and fits t(b) ≈ a + c·b. Progress runs 0..100:
// sidecar, warm-up (each lane, each batch size), profile (each point). The
// synthetic model's t(b) is its cost formula, not a measurement, so it loads
// at once.
//
// The request's cancel token is checked between steps: between lanes,
// between warm-up batch sizes, before the profile and between its runs. Once
// it is set the load stops there and returns kCancelled naming the file; the
// token stops mattering when the load returns, so lanes the engine adds
// later still load.
//
// Errors come back as values naming the file, device or field: a missing
// file, a bad sidecar, an unavailable device, a max_batch_size above the
// model's.
// Thread-safety: the loader may run on any thread, several at once; it takes
// seconds for a large model, so never on the GUI thread. `progress` is called
// on the loader's thread, and only while the loader runs.
// It opens the model as every command does (local_model.h).

#pragma once

#include <string>

#include "model/model_load.h"

namespace batchscope {

// `blas_threads` per lane, as LoadHooks takes it (0: the lane's share of
// the cores).
ModelLoader make_model_loader(int blas_threads);

// What the window's describe dialog runs (torch/describe.h); empty without
// LibTorch.
ModelDescriber make_model_describer();

}  // namespace batchscope
