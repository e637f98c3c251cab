// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A tune's Pareto front as the table `batchscope tune` prints: at most
// `rows` of its distinct points, spread evenly over it, the best marked with
// '*'; points with the same figures show once, as the first of them, with
// how many more there are ("(+3 alike)"). The best is added at the end when
// the spread passed it by.
// Thread-safety: free functions without shared state.

#include <cstddef>
#include <string>

#include "tuning/gen_tune.h"
#include "tuning/tune_headroom.h"
#include "tuning/tuner.h"

namespace batchscope {

// Throughput against p99 and losses, a row per configuration.
std::string front_text(const TuneResult& result, size_t rows);
// The candidates rank_by_headroom() checked, the chosen marked '*' and
// each that lacks the headroom "fragile", then what was chosen and why.
std::string headroom_table(const HeadroomResult& h, double slo_p99_ms);
// Goodput against TTFT and ITL at the SLO's quantile and losses.
std::string front_text(const GenTuneResult& result, size_t rows);

}  // namespace batchscope
