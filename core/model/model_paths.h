// SPDX-License-Identifier: GPL-3.0-or-later
// Where Batchscope finds the models it ships. An installed executable looks
// under its own prefix (<prefix>/share/batchscope/models, found from
// /proc/self/exe), so it works from any folder; the build tree has the same
// layout (build/share/batchscope/models links to the source's models/).
// $BATCHSCOPE_MODELS, when set, overrides both.

#pragma once

#include <string>

namespace batchscope {

// The folder the running executable lives in, or "" if it cannot be read.
std::string executable_dir();

// The models folder: $BATCHSCOPE_MODELS, else <exe>/../share/batchscope/models,
// else ./models; "" when none of these is a folder.
std::string models_dir();

// The file a --model value names. A path that exists (from the current folder,
// or absolute) is itself. Otherwise the models folder is tried for it with a
// leading "models/" dropped, then for its file name, then, for a bare name,
// with ".pt" added: "mlp" and "models/mlp.pt" both find the shipped mlp. A
// value found nowhere is returned unchanged, so the error names what was sent.
std::string find_model(const std::string& value);

}  // namespace batchscope
