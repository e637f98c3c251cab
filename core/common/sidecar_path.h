// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a model's JSON sidecar lives: beside the model (models/mlp.pt ->
// models/mlp.json), or, where that folder cannot be written, in the user's
// config folder under the model's absolute path:
//   $XDG_CONFIG_HOME/batchscope/sidecars/usr/share/models/mlp.json
// ($XDG_CONFIG_HOME defaults to ~/.config). The one beside wins when both exist.
// Thread-safety: free functions; they read the environment and the file system.

#include <string>

namespace batchscope {

// "models/mlp.pt" -> "models/mlp.json"
std::string sidecar_beside(const std::string& model_path);
// The config folder's place for this model's sidecar; empty when neither
// XDG_CONFIG_HOME nor HOME is set.
std::string sidecar_in_config(const std::string& model_path);
// The sidecar to read: beside the model if it exists, else the config
// folder's if that exists, else the one beside (which errors then name).
std::string sidecar_path(const std::string& model_path);

}  // namespace batchscope
