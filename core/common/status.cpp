// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/status.h"

namespace batchscope {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kQueueFull: return "queue_full";
    case ErrorCode::kTimedOut: return "timed_out";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kModelError: return "model_error";
    case ErrorCode::kShuttingDown: return "shutting_down";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kModelTimedOut: return "model_timed_out";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace batchscope
