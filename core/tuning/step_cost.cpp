// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/step_cost.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

namespace batchscope {

namespace {

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double us_of(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

bool measured(const StepRecord& s) { return s.start != TimePoint{} && s.end > s.start; }

// A decode-only step: its decodes, its context and its time.
struct DecodePoint {
  double decodes = 0, context = 0, us = 0;
};

// Least squares of us over the terms in `use` (the fixed cost, the decodes,
// the context), the others held at 0; false when the points cannot fix them.
// `sse` is the sum of the squared residuals.
bool fit_terms(const std::vector<DecodePoint>& pts, const std::array<bool, 3>& use,
               std::array<double, 3>& coef, double& sse) {
  std::array<int, 3> idx{};
  int n = 0;
  for (int i = 0; i < 3; ++i) {
    if (use[i]) idx[n++] = i;
  }
  std::array<std::array<double, 4>, 3> m{};  // the normal equations, augmented
  for (const DecodePoint& p : pts) {
    const double x[3] = {1, p.decodes, p.context};
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) m[i][j] += x[idx[i]] * x[idx[j]];
      m[i][3] += x[idx[i]] * p.us;
    }
  }
  for (int col = 0; col < n; ++col) {  // Gauss-Jordan with partial pivoting
    int pivot = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    }
    std::swap(m[col], m[pivot]);
    double largest = 0;
    for (int j = 0; j < n; ++j) largest = std::max(largest, std::abs(m[j][col]));
    if (std::abs(m[col][col]) <= 1e-9 * std::max(largest, 1e-300)) return false;
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int j = col; j < 4; ++j) m[r][j] -= f * m[col][j];
    }
  }
  coef = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    coef[static_cast<size_t>(idx[i])] = m[i][3] / m[i][i];
    if (!std::isfinite(coef[static_cast<size_t>(idx[i])])) return false;
  }
  sse = 0;
  for (const DecodePoint& p : pts) {
    const double r = p.us - (coef[0] + coef[1] * p.decodes + coef[2] * p.context);
    sse += r * r;
  }
  return true;
}

// Least squares with every term at 0 or above: the best of the fits over
// each set of terms whose terms all come out so. The context term (only when
// `with_context`) must take a twentieth off the residuals of the best fit
// without it: in a live run the context mostly grows with the decode count,
// and a term the noise gives would be extrapolated to long contexts.
void fit_nonnegative(const std::vector<DecodePoint>& pts, bool with_context, double& a, double& b,
                     double& c) {
  std::array<double, 2> best = {std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity()};
  std::array<std::array<double, 3>, 2> chosen{};
  for (int mask = 1; mask < (with_context ? 8 : 4); ++mask) {
    const std::array<bool, 3> use = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    std::array<double, 3> coef{};
    double sse = 0;
    if (!fit_terms(pts, use, coef, sse)) continue;
    if (coef[0] < 0 || coef[1] < 0 || coef[2] < 0) continue;
    // A step of one decode at no context costs something: the context term
    // alone would price short contexts at nothing (a run whose later, longer
    // steps were slowed by other work fits that best). The fixed term alone,
    // the mean step, always passes.
    if (coef[0] + coef[1] < 0.01) continue;
    // An earlier set wins a tie.
    const size_t k = use[2] ? 1 : 0;
    if (sse < best[k] * (1 - 1e-12)) best[k] = sse, chosen[k] = coef;
  }
  const size_t k = best[1] < 0.95 * best[0] ? 1 : 0;
  a = chosen[k][0], b = chosen[k][1], c = chosen[k][2];
}

// The fit, refitted without the steps far from it (a cold first step, a
// stall): those beyond 3 median absolute deviations, three times at most.
// The context term only where the steps read at least two ranges of
// context per sequence; otherwise it is the decode count again.
void robust_fit(std::vector<DecodePoint> pts, bool with_context, double& a, double& b, double& c) {
  for (int round = 0;; ++round) {
    fit_nonnegative(pts, with_context, a, b, c);
    if (round == 3) return;
    std::vector<double> off;
    for (const DecodePoint& p : pts)
      off.push_back(std::abs(p.us - (a + b * p.decodes + c * p.context)));
    std::vector<double> sorted = off;
    const double mad = median(sorted);
    std::vector<DecodePoint> kept;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (off[i] <= 3 * 1.4826 * mad + 1e-6 * pts[i].us) kept.push_back(pts[i]);
    }
    if (kept.size() == pts.size() || kept.size() < 2) return;
    pts = std::move(kept);
  }
}

// The spread's quantiles of `ratios` (reordered); none below kSpreadSteps.
constexpr size_t kSpreadSteps = 20;
std::vector<StepSpreadPoint> spread_of(std::vector<double>& ratios) {
  std::vector<StepSpreadPoint> out;
  if (ratios.size() < kSpreadSteps) return out;
  std::sort(ratios.begin(), ratios.end());
  for (double q : kStepSpreadQuantiles) {
    const size_t i = std::min(ratios.size() - 1, static_cast<size_t>(q * ratios.size()));
    out.push_back({q, ratios[i]});
  }
  return out;
}

}  // namespace

Expected<StepCost> measure_step_cost(std::span<const StepRecord> steps, uint32_t lanes) {
  StepCost c;
  c.lanes = std::max<uint32_t>(lanes, 1);
  std::vector<DecodePoint> pts;
  std::map<uint32_t, bool> contexts;                // per-sequence context ranges (powers of 2)
  std::map<uint32_t, std::vector<double>> buckets;  // by decodes, for the rows
  for (const StepRecord& s : steps) {
    if (!measured(s)) continue;
    ++c.steps;
    if (s.prefill_tokens != 0 || s.decodes == 0) continue;
    const double us = us_of(s.end - s.start);
    pts.push_back({static_cast<double>(s.decodes), static_cast<double>(s.context_tokens), us});
    contexts[std::bit_floor(s.context_tokens / s.decodes + 1)] = true;
    buckets[std::bit_floor(s.decodes)].push_back(us);
    ++c.decode_steps;
  }
  if (pts.empty()) {
    return invalid_argument("the run recorded no model step that only decoded (" +
                            std::to_string(c.steps) + " steps): run longer to measure a step");
  }
  robust_fit(pts, contexts.size() >= 2, c.step_us, c.token_us, c.context_us);
  for (auto& [from, us] : buckets) c.rows.push_back({from, from * 2 - 1, us.size(), median(us)});

  auto fitted = [&](const StepRecord& s) {
    return c.step_us + c.token_us * s.decodes + c.context_us * s.context_tokens;
  };
  std::vector<double> prefill, ratios, between;
  std::map<uint32_t, std::vector<double>> by_decodes;  // each row's ratios
  std::map<uint32_t, const StepRecord*> last;          // each lane's step before
  for (const StepRecord& s : steps) {
    const StepRecord*& before = last[s.lane];
    if (!measured(s)) {
      before = nullptr;
      continue;
    }
    // The engine steps again at once while sequences run.
    if (before != nullptr && before->running > 0 && s.start >= before->end) {
      between.push_back(us_of(s.start - before->end));
    }
    before = &s;
    const double us = us_of(s.end - s.start);
    if (s.prefill_tokens == 0) {
      if (s.decodes > 0 && fitted(s) > 0) {
        ratios.push_back(us / fitted(s));
        by_decodes[std::bit_floor(s.decodes)].push_back(us / fitted(s));
      }
      continue;
    }
    // Each prefilling step's cost per prompt token beyond the line.
    prefill.push_back(std::max(0.0, us - fitted(s)) / s.prefill_tokens);
  }
  if (!prefill.empty()) c.prefill_token_us = median(prefill);
  if (!between.empty()) c.between_us = median(between);
  c.spread = spread_of(ratios);
  for (auto& [from, r] : by_decodes) {
    if (r.size() >= kSpreadSteps)
      c.spreads.push_back({from, from * 2 - 1, false, r.size(), spread_of(r)});
  }
  // The steps with a prefill about the fit with their prompt tokens' cost.
  std::vector<double> prefilling;
  for (const StepRecord& s : steps) {
    if (!measured(s) || s.prefill_tokens == 0) continue;
    const double modelled = fitted(s) + c.prefill_token_us * s.prefill_tokens;
    if (modelled > 0) prefilling.push_back(us_of(s.end - s.start) / modelled);
  }
  if (prefilling.size() >= kSpreadSteps)
    c.spreads.push_back({0, 0, true, prefilling.size(), spread_of(prefilling)});
  return c;
}

const std::vector<StepSpreadPoint>& spread_for(const std::vector<StepSpreadPoint>& pooled,
                                               const std::vector<StepSpreadBucket>& buckets,
                                               uint32_t decodes, bool prefill) {
  const StepSpreadBucket* best = nullptr;
  uint32_t off = UINT32_MAX;  // decodes from the nearest bucket
  for (const StepSpreadBucket& b : buckets) {
    if (b.spread.empty()) continue;
    if (prefill || b.prefill) {
      if (prefill && b.prefill) return b.spread;
      continue;
    }
    const uint32_t d = decodes < b.decodes_from ? b.decodes_from - decodes
                       : decodes > b.decodes_to ? decodes - b.decodes_to
                                                : 0;
    if (d < off) off = d, best = &b;
  }
  return best != nullptr ? best->spread : pooled;
}

std::optional<StepCost> at_lanes(const StepCost& cost, uint32_t lanes) {
  if (lanes == cost.lanes) return cost;
  for (const StepLaneFit& f : cost.by_lanes) {
    if (f.lanes != lanes) continue;
    StepCost c;
    c.lanes = lanes;
    c.steps = f.steps;
    c.step_us = f.step_us;
    c.token_us = f.token_us;
    c.context_us = f.context_us;
    c.prefill_token_us = f.prefill_token_us;
    c.between_us = f.between_us;
    c.spread = cost.spread;
    c.spreads = cost.spreads;
    return c;
  }
  return std::nullopt;
}

double step_level(const StepCost& kept, std::span<const StepRecord> steps, uint32_t lanes) {
  const std::optional<StepCost> fit = at_lanes(kept, std::max<uint32_t>(lanes, 1));
  if (!fit) return 0;
  std::vector<double> ratios;
  for (const StepRecord& s : steps) {
    if (s.decodes == 0 || s.prefill_tokens > 0 || s.end <= s.start) continue;
    const double modelled =
        fit->step_us + fit->token_us * s.decodes + fit->context_us * s.context_tokens;
    if (modelled <= 0) continue;
    ratios.push_back(std::chrono::duration<double, std::micro>(s.end - s.start).count() / modelled);
  }
  if (ratios.empty()) return 0;
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2),
                   ratios.end());
  return ratios[ratios.size() / 2];
}

Expected<StepCost> learn_step_cost(const std::optional<StepCost>& kept,
                                   std::span<const StepRecord> steps, uint32_t lanes,
                                   double scale) {
  lanes = std::max<uint32_t>(lanes, 1);
  auto seen = measure_step_cost(steps, lanes);
  if (!seen) return seen.error();
  if (scale != 1) {
    for (double StepCost::*f : {&StepCost::step_us, &StepCost::token_us, &StepCost::context_us,
                                &StepCost::prefill_token_us, &StepCost::between_us}) {
      (*seen).*f *= scale;
    }
  }
  if (!kept) return *seen;
  if (kept->lanes == lanes) return refine_step_cost(*kept, *seen);
  StepCost out = *kept;
  const std::optional<StepCost> before = at_lanes(*kept, lanes);
  const StepCost now = before ? refine_step_cost(*before, *seen) : *seen;
  const StepLaneFit fit{lanes,         now.steps,      now.step_us,
                        now.token_us,  now.context_us, now.prefill_token_us,
                        now.between_us};
  std::erase_if(out.by_lanes, [&](const StepLaneFit& f) { return f.lanes == lanes; });
  out.by_lanes.push_back(fit);
  std::sort(out.by_lanes.begin(), out.by_lanes.end(),
            [](const StepLaneFit& a, const StepLaneFit& b) { return a.lanes < b.lanes; });
  return out;
}

StepCost refine_step_cost(const StepCost& kept, const StepCost& seen, uint64_t cap) {
  if (seen.steps == 0) return kept;
  const double w_kept = static_cast<double>(std::min(kept.steps, cap));
  const double w_seen = static_cast<double>(seen.steps);
  const double total = w_kept + w_seen;
  StepCost out = kept;
  for (double StepCost::*f : {&StepCost::step_us, &StepCost::token_us, &StepCost::context_us,
                              &StepCost::prefill_token_us, &StepCost::between_us}) {
    out.*f = (kept.*f * w_kept + seen.*f * w_seen) / total;
  }
  // A run with no prefill has no prompt-token cost to teach.
  if (seen.prefill_token_us <= 0) out.prefill_token_us = kept.prefill_token_us;
  out.steps = kept.steps + seen.steps;
  out.decode_steps = kept.decode_steps + seen.decode_steps;
  if (!seen.rows.empty()) out.rows = seen.rows;
  if (!seen.spread.empty()) out.spread = seen.spread;
  for (const StepSpreadBucket& b : seen.spreads) {
    std::erase_if(out.spreads, [&](const StepSpreadBucket& k) {
      return k.prefill == b.prefill && k.decodes_from == b.decodes_from;
    });
    out.spreads.push_back(b);
  }
  std::sort(out.spreads.begin(), out.spreads.end(),
            [](const StepSpreadBucket& a, const StepSpreadBucket& b) {
              return std::pair(a.prefill, a.decodes_from) < std::pair(b.prefill, b.decodes_from);
            });
  if (!seen.grid.empty()) out.grid = seen.grid;
  return out;
}

}  // namespace batchscope
