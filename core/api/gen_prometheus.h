// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The body of `GET /metrics` for a generative model: request counts by
// finish reason, tokens in and out, steps, preemptions, time to first token,
// inter-token latency, queue wait and end-to-end latency histograms, the
// live gauges (running and waiting sequences, cache blocks) and the options
// in force, in the Prometheus text format 0.0.4. Names follow the request
// server's (batchscope_*) and vLLM's where users know them.
// Thread-safety: a pure function of its arguments.

#include <string>

#include "api/prometheus.h"
#include "generation/gen_engine.h"
#include "generation/gen_metrics.h"

namespace batchscope {

std::string generation_prometheus_text(const GenWindow& totals, const GenStatus& s,
                                       const ServerInfo& info);

}  // namespace batchscope
