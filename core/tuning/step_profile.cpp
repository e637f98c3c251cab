// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/step_profile.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>

#include "generation/gen_planner.h"

namespace batchscope {

namespace {

double profile_us(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

Expected<StepProfile> profile_steps(LmRunner& model, const StepProfileOptions& o,
                                    const Clock& clock,
                                    const std::function<void(const StepProfilePoint&)>& on_point) {
  const LmInfo& m = model.info();
  const int longest = m.context_length - 1;
  if (longest < 1 || m.num_blocks < 1 || m.block_size < 1) {
    return invalid_argument("model '" + m.name + "' has no room for one decode (context " +
                            std::to_string(m.context_length) + ", " + std::to_string(m.num_blocks) +
                            " cache blocks)");
  }
  const uint32_t runs = std::max<uint32_t>(o.runs, 1);
  model.warm_up(o.max_seqs, o.max_batched_tokens);
  // Every sequence's block table points at block 0.
  const std::vector<int32_t> table(
      blocks_for(static_cast<uint32_t>(m.context_length), static_cast<uint32_t>(m.block_size)), 0);
  const int cap =
      std::min<int>(longest, static_cast<int>(std::max<uint32_t>(o.max_batched_tokens, 1)));
  std::vector<int32_t> tokens(static_cast<size_t>(cap));
  for (int k = 0; k < cap; ++k) tokens[static_cast<size_t>(k)] = 'a' + k % 26;
  auto width = [&](int positions) {
    return std::span<const int32_t>(table.data(), blocks_for(static_cast<uint32_t>(positions),
                                                             static_cast<uint32_t>(m.block_size)));
  };

  StepProfile out;
  auto measure = [&](const LmStep& step, StepProfilePoint p) -> Status {
    std::vector<double> us;
    for (uint32_t r = 0; r < runs; ++r) {
      StepRecord s;
      s.step = out.steps.size() + 1;
      s.decodes = p.decodes;
      s.prefill_tokens = p.prefill_tokens;
      s.prefills = p.prefill_tokens > 0 ? 1 : 0;
      s.context_tokens = p.decodes * p.position;
      s.start = clock.now();
      Expected<LmLogits> logits = model.step(step);
      s.end = clock.now();
      if (!logits) return logits.error();
      us.push_back(profile_us(s.end - s.start));
      out.steps.push_back(s);
    }
    p.p50_us = quantile(us, 0.5);
    p.p90_us = quantile(us, 0.9);
    p.max_us = *std::max_element(us.begin(), us.end());
    out.points.push_back(p);
    if (on_point) on_point(p);
    return Status::Ok();
  };

  for (int n = std::min(8, cap);; n = std::min(2 * n, cap)) {
    LmStep s;
    s.prefills.push_back(PrefillChunk{
        std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)), 0, width(n + 1), true});
    if (Status st = measure(s, {.prefill_tokens = static_cast<uint32_t>(n)}); !st)
      return st.error();
    if (n == cap) break;
  }
  const int seqs = static_cast<int>(std::max<uint32_t>(o.max_seqs, 1));
  for (int position = std::min(8, longest);; position = std::min(4 * position, longest)) {
    for (int k = 1;; k = std::min(2 * k, seqs)) {
      LmStep s;
      for (int i = 0; i < k; ++i)
        s.decodes.push_back(DecodeItem{tokens[0], position, width(position + 1)});
      const StepProfilePoint p{.decodes = static_cast<uint32_t>(k),
                               .position = static_cast<uint32_t>(position)};
      if (Status st = measure(s, p); !st) return st.error();
      if (k == seqs) break;
    }
    if (position == longest) break;
  }

  auto cost = measure_step_cost(out.steps);
  if (!cost) return cost.error();
  out.cost = *cost;
  // The grid prices the steps the line cannot follow; the spread is each
  // step about its own point's median, which the grid holds.
  std::vector<double> ratios;
  for (size_t k = 0; k < out.points.size(); ++k) {
    const StepProfilePoint& p = out.points[k];
    out.cost.grid.push_back({p.decodes, p.position, p.prefill_tokens, p.p50_us});
    for (size_t r = k * runs; r < (k + 1) * runs && r < out.steps.size(); ++r) {
      if (p.p50_us > 0)
        ratios.push_back(profile_us(out.steps[r].end - out.steps[r].start) / p.p50_us);
    }
  }
  out.cost.spread.clear();
  out.cost.spreads.clear();
  if (ratios.size() >= 20) {
    for (double q : kStepSpreadQuantiles) out.cost.spread.push_back({q, quantile(ratios, q)});
  }
  for (StepProfilePoint& p : out.points) {
    p.fitted_us = out.cost.step_us + out.cost.token_us * p.decodes +
                  out.cost.context_us * p.decodes * p.position +
                  out.cost.prefill_token_us * p.prefill_tokens;
  }
  return out;
}

}  // namespace batchscope
