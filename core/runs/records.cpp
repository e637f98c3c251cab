// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/records.h"

namespace batchscope {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kRejected: return "rejected";
    case Outcome::kTimedOut: return "timeout";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kModelError: return "error";
    case Outcome::kShuttingDown: return "shutdown";
    case Outcome::kInvalid: return "invalid";
  }
  return "?";
}

const char* batch_reason_name(BatchReason r) {
  switch (r) {
    case BatchReason::kFull: return "full";
    case BatchReason::kTimeout: return "timeout";
    case BatchReason::kDrain: return "drain";
  }
  return "?";
}

}  // namespace batchscope
