// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The cost model's checks, shared by its constructors (cost_model.cpp) and
// its file reader (cost_json.cpp). Internal to core/tuning.
// Thread-safety: pure functions.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "tuning/cost_model.h"

namespace batchscope::cost_detail {

// A number as the messages quote it (shortest round trip; NaN, Infinity).
std::string number_text(double v);
// "points[2].batch", or "points[2]" with no field.
std::string point_name(size_t i, std::string_view field);
// At least one point; batch >= 1 and strictly increasing; median_us in
// [0, kMaxCostUs]; spread in [0, 1); run_quantiles as check_quantiles()
// with max kMaxRunFactor. `prefix` starts every message.
Status check_points(const std::vector<CostPoint>& points, const std::string& prefix);
// Overhead bands by batch size: at most kMaxSizeBands, each check_quantiles().
Status check_bands(const std::vector<std::vector<double>>& bands, const std::string& prefix);
// A send lag's quantiles (check_quantiles) and rates (finite, 0..1e9).
Status check_send_lag(const SendLagModel& lag, const std::string& prefix);
// Empty, or 2 to kMaxQuantiles values, each finite in [0, max], never
// decreasing; the message names `name` and the index and quotes the value.
Status check_quantiles(const std::vector<double>& q, const char* name, double max,
                       const std::string& prefix);

}  // namespace batchscope::cost_detail
