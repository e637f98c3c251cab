// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A whole file read into a string: the payloads, configurations, traces
// and summaries the commands are given by path.
// Thread-safety: a free function.

#include <string>

#include "common/status.h"

namespace batchscope {

// The bytes of the file at `path`, or kInvalidArgument "cannot read PATH"
// (a folder, a file that is not there or not readable).
Expected<std::string> read_file_text(const std::string& path);

}  // namespace batchscope
