// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a figure was measured on, kept with every run in the history so that
// two figures can be told apart later: the machine (CPU model, cores, host,
// kernel, allocator, NVIDIA GPUs and driver) and the model file (path, size,
// SHA-256, modified time, its metadata sidecar).
// Rooms above add what they know (LibTorch, BLAS and threads in core/torch; a
// GPU and its driver where one is used) as further keys of the same object.
// Thread-safety: free functions; they read /proc and the file system.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "runs/machine_facts.h"  // machine_json

namespace batchscope {

struct FileFacts {
  std::string path;      // absolute
  uint64_t size = 0;     // bytes
  std::string sha256;    // lower-case hex
  std::string modified;  // UTC, ISO 8601
};

// Reads the whole file once to hash it.
Expected<FileFacts> file_facts(const std::string& path);

// The model file's facts (file_facts_json) and, when NAME.json stands beside
// it, that sidecar as "metadata"; just the path when it cannot be read.
std::string model_file_json(const std::string& path);

// {"path": ..., "size": ..., "sha256": ..., "modified": ...}
std::string file_facts_json(const FileFacts& f);

// The SHA-256 of `bytes`, lower-case hex.
std::string sha256_hex(const void* bytes, size_t size);

}  // namespace batchscope
