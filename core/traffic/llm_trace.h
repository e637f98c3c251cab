// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Language-model traces: when each request came, and its prompt and output
// lengths, read from the public formats that record them:
//   azure     CSV  TIMESTAMP,ContextTokens,GeneratedTokens (TIMESTAMP a date-time,
//                  "2023-11-16 18:15:46.6805900"), Azure's LLM inference traces;
//   burstgpt  CSV  Timestamp,Model,Request tokens,Response tokens,Total tokens,
//                  Log Type (Timestamp in seconds; later releases add columns);
//   mooncake  JSONL, one object a line: timestamp (ms), input_length, output_length;
//   timestamps     the arrival-only CSV of trace_csv.h (no lengths).
// The first non-blank line tells the format: a '{' is Mooncake, a header
// naming the columns above is Azure or BurstGPT (columns found by name, in
// any order, case-insensitive), anything else is the timestamps CSV.
// Arrivals are offsets from the first request's.
// Thread-safety: pure functions.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "traffic/gen_workload.h"

namespace batchscope {

struct LlmTrace {
  std::string format;               // "azure", "burstgpt", "mooncake" or "timestamps"
  std::vector<Duration> at;         // non-decreasing, the first 0 (timestamps: as written)
  std::vector<GenLengths> lengths;  // one per arrival; empty for "timestamps"
};

// Errors name the line and quote the cell: a timestamp before the previous
// one, a length that is not a whole number from 0 to 100,000,000, a missing
// column or key.
Expected<LlmTrace> parse_llm_trace(std::string_view text);
// Reads and parses a file; "cannot read FILE" when it cannot be opened.
Expected<LlmTrace> load_llm_trace(const std::string& path);

// What fit_to_context changed, for the line a command prints.
struct ContextFit {
  size_t prompts_clipped = 0;  // prompts cut to context - 1 tokens
  size_t outputs_cut = 0;      // max_tokens cut so prompt + max_tokens fits
  size_t raised = 0;           // empty prompts or zero max_tokens raised to 1
  bool any() const { return prompts_clipped + outputs_cut + raised > 0; }
  // "3 prompts clipped to the context of 1024 tokens, ..." or "".
  std::string describe(uint32_t context) const;
};

// Fits every request to a model of `context` tokens (>= 2): a prompt keeps at
// most context - 1 tokens, max_tokens at most what is left, and neither is
// below 1 (the engine refuses an empty prompt or max_tokens 0).
ContextFit fit_to_context(std::vector<GenLengths>& lengths, uint32_t context);

}  // namespace batchscope
