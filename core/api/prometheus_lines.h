// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The lines of the Prometheus text format that every exporter here writes:
// family preambles, samples, and latency histograms in seconds over fixed
// "le" bounds (see prometheus.h for how log buckets map onto them).
// Thread-safety: free functions without shared state.

#include <cstdint>
#include <string>
#include <string_view>

#include "api/prometheus.h"
#include "runs/histogram.h"

namespace batchscope::prom {

void append_double(std::string& out, double v);
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help);
void sample_u(std::string& out, std::string_view name, std::string_view labels, uint64_t v);
void sample_f(std::string& out, std::string_view name, std::string_view labels, double v);
void gauge_u(std::string& out, std::string_view name, std::string_view help, uint64_t v);
void gauge_f(std::string& out, std::string_view name, std::string_view help, double v);
void counter(std::string& out, std::string_view name, std::string_view help, uint64_t v);
// NAME_bucket, NAME_sum and NAME_count lines of a histogram of nanoseconds,
// reported in seconds; the family preamble is the caller's.
void latency_histogram(std::string& out, std::string_view name, std::string_view labels,
                       const LogHistogram& ns);

}  // namespace batchscope::prom

namespace batchscope {
// The model, device and HTTP families every /metrics answer ends with.
void server_families(std::string& out, const ServerInfo& info);
}  // namespace batchscope
