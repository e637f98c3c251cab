// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/kept_summary.h"

#include <utility>

#include "common/options.h"

namespace batchscope {

Expected<GenRun> load_gen_run(History& h, const HistoryRun& row) {
  auto rows = h.load_generation(row.id, TimePoint{});
  if (!rows) return rows.error();
  auto steps = h.load_steps(row.id, TimePoint{});
  if (!steps) return steps.error();
  GenRun g;
  g.pattern = row.config.pattern;
  g.target = row.config.target;
  g.model = row.model;
  g.options = describe_generation(row.config.options);
  g.seed = row.config.seed;
  g.requests.reserve(rows->size());
  for (const HistoryGenRequest& q : *rows) g.requests.push_back(gen_result_of(q));
  g.steps = std::move(*steps);
  return g;
}

Expected<std::string> kept_summary(History& h, const HistoryRun& row) {
  if (row.finished() || !row.generative()) return summary_of(h, row);
  auto g = load_gen_run(h, row);
  if (!g) return g.error();
  return gen_summary_json(*g, summarize_gen(*g, 0, 0));
}

}  // namespace batchscope
