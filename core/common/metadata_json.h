// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads a model's JSON sidecar (NAME.json beside NAME.pt) into ModelMetadata:
//   {"name": ..., "description": ..., "max_batch_size": N,
//    "inputs":  [{"name": ..., "datatype": "FP32", "shape": [-1, 128],
//                 "finite_only": true}, ...],
//    (a variable dimension: "shape": [-1, -1], "max_shape": [-1, 256],
//     "pad_value": 0; integer inputs may give "range": [LOW, HIGH])
//    "outputs": [{"name": ..., "datatype": ..., "shape": [...]}, ...]}
// Datatypes are KServe v2 names; a BYTES tensor (one byte string per
// request) has shape [-1] or [-1, 1]. Errors name the file and the field.
// Thread-safety: free functions without shared state.

#include <string>

#include "common/model_metadata.h"
#include "common/sidecar_path.h"

namespace batchscope {

Expected<ModelMetadata> parse_metadata(const std::string& json_text, const std::string& origin);
Expected<ModelMetadata> load_metadata(const std::string& json_path);
// The sidecar's JSON for `m`, as parse_metadata() reads it (indented, one
// trailing newline).
std::string metadata_json(const ModelMetadata& m);

}  // namespace batchscope
