// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/history.h"

namespace batchscope {

Expected<HistoryFilter> parse_history_filter(std::string model, std::string kind,
                                             const std::string& since, std::string text) {
  HistoryFilter f;
  f.model = std::move(model);
  f.kind = std::move(kind);
  f.text = std::move(text);
  if (!f.kind.empty() && f.kind != "bench" && f.kind != "tune" && f.kind != "recorded" &&
      f.kind != "generation" && f.kind != "serve") {
    return invalid_argument("--kind " + f.kind +
                            " is not one of bench, tune, recorded, generation, serve");
  }
  if (since.empty()) return f;
  auto digits = [&](size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i)
      if (i >= since.size() || since[i] < '0' || since[i] > '9') return false;
    return true;
  };
  const bool date = since.size() >= 10 && digits(0, 4) && since[4] == '-' && digits(5, 2) &&
                    since[7] == '-' && digits(8, 2);
  if (!date || (since.size() != 10 && since.size() != 20 && since.size() != 19)) {
    return invalid_argument("--since " + since + " is not a date; use 2026-11-28 or " +
                            "2026-11-28T19:00:00Z (UTC)");
  }
  f.since = since.size() == 10 ? since + "T00:00:00Z" : since;
  return f;
}

}  // namespace batchscope
