// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/gen_prometheus.h"

#include <array>

#include "api/prometheus_lines.h"

namespace batchscope {

using namespace prom;

std::string generation_prometheus_text(const GenWindow& t, const GenStatus& s,
                                       const ServerInfo& info) {
  std::string out;
  out.reserve(16 * 1024);
  family(out, "batchscope_generation_requests_total", "counter",
         "Generation requests that ended, by finish reason.");
  for (size_t i = 0; i < kFinishReasonCount; ++i) {
    const std::string labels =
        std::string("reason=\"") + finish_reason_name(static_cast<FinishReason>(i)) + "\"";
    sample_u(out, "batchscope_generation_requests_total", labels, t.reasons[i]);
  }
  counter(out, "batchscope_generation_admitted_total", "Generation requests admitted.", s.admitted);
  counter(out, "batchscope_generation_rejected_total",
          "Generation requests refused at admission: queue full or stopping.", s.rejected);
  counter(out, "batchscope_prompt_tokens_total",
          "Prompt tokens prefilled, recomputed ones included.", s.prompt_tokens);
  counter(out, "batchscope_generation_tokens_total", "Output tokens generated.", s.output_tokens);
  counter(out, "batchscope_steps_total", "Model steps run.", s.steps);
  counter(out, "batchscope_preemptions_total",
          "Sequences whose cache was given up and recomputed later.", s.preemptions);

  struct Hist {
    const char* name;
    const char* help;
    const LogHistogram* ns;
  };
  const std::array<Hist, 5> hists{{
      {"batchscope_time_to_first_token_seconds", "Arrival to the first output token.", &t.ttft_ns},
      {"batchscope_inter_token_latency_seconds", "Time between consecutive output tokens.",
       &t.itl_ns},
      {"batchscope_generation_queue_seconds", "Arrival to first scheduled.", &t.queue_wait_ns},
      {"batchscope_generation_e2e_seconds", "Arrival to the last token.", &t.e2e_ns},
      {"batchscope_step_duration_seconds", "One model step: prefill chunks and decodes.",
       &t.step_ns},
  }};
  for (const Hist& h : hists) {
    family(out, h.name, "histogram", h.help);
    latency_histogram(out, h.name, {}, *h.ns);
  }

  gauge_u(out, "batchscope_sequences_running", "Sequences holding cache now.", s.running);
  gauge_u(out, "batchscope_sequences_waiting", "Requests admitted, not yet running.", s.waiting);
  gauge_u(out, "batchscope_cache_blocks_used", "Key/value cache blocks in use.", s.blocks_used);
  gauge_u(out, "batchscope_cache_blocks_capacity", "Key/value cache blocks in the pool.",
          s.blocks_total);
  gauge_u(out, "batchscope_options_version", "Version of the options in force.", s.version);
  family(out, "batchscope_scheduling_info", "gauge", "Scheduling in force (value always 1).");
  sample_u(out, "batchscope_scheduling_info",
           std::string("scheduling=\"") + scheduling_name(s.options.scheduling) + "\"", 1);
  gauge_u(out, "batchscope_max_num_seqs", "Sequences allowed to run at once.",
          s.options.max_num_seqs);
  gauge_u(out, "batchscope_max_num_batched_tokens", "Tokens one step may process.",
          s.options.max_num_batched_tokens);
  gauge_u(out, "batchscope_option_lanes", "Option in force: engine lanes (model copies).",
          s.options.num_lanes);
  gauge_u(out, "batchscope_lanes_serving", "Engine lanes warm and taking requests.", s.lanes);
  server_families(out, info);
  return out;
}

}  // namespace batchscope
