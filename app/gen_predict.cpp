// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "app/run_output.h"
#include "model/kept_steps.h"
#include "traffic/gen_load.h"
#include "traffic/llm_trace.h"
#include "tuning/gen_predictor.h"

namespace batchscope {

namespace {

const Fail fail{"bench"};

}  // namespace

int run_gen_predict(const ModelChoice& choice, const Options& options, const ArrivalSpec& spec,
                    GenWorkloadSpec lengths, const CostChoice& cost_choice,
                    const GenPredictOutputs& out) {
  // The model's context and cache, as the engine would have them.
  auto model = LocalModel::open(choice);
  if (!model) return fail(model.error().message, 1);
  const LmInfo info = model->lm_info();
  if (Status s = check_cache(info); !s) return fail(s.message(), 1);
  if (Status s = options.validate(); !s) return fail(s.message());
  const auto context = static_cast<uint32_t>(std::max(2, info.context_length));
  if (const ContextFit fit = fit_to_context(lengths.replay, context); fit.any()) {
    std::printf("  trace: %s\n", fit.describe(context).c_str());
  }
  auto priced_steps = price_gen_steps(*model, options, spec, lengths, cost_choice, terminal_say());
  if (!priced_steps) {
    // A cost file that cannot be read is the caller's; a calibration that failed is not.
    return fail(priced_steps.error().message, cost_choice.file.empty() ? 1 : 2);
  }
  const GenStepCost cost = priced_steps->cost;
  const std::string& priced = priced_steps->source;
  std::printf("  step cost: %s (%s)\n", cost.text().c_str(), priced.c_str());
  if (cost.of_step(1, 0) <= Duration(0)) {
    return fail("a step that costs nothing cannot be predicted (" + priced +
                "): give the model a cost, for example --synthetic-lm 2000,20");
  }

  GenWorkload workload = lengths.workload(spec.seed);
  GenRun run = predict_gen(spec, workload, options, info, cost);
  run.pattern = spec.describe();
  run.workload = lengths.describe();
  run.target = "predict";
  run.model = info.name;
  run.options = describe_generation(options);
  run.seed = spec.seed;
  std::printf("Batchscope bench: %s -> predict\n", run.pattern.c_str());
  const GenSummary summary = summarize_gen(run, out.slo_ttft_ms, out.slo_itl_ms);
  std::printf("%s", gen_summary_text(run, summary).c_str());
  int rc = 0;
  auto save = [&](const std::string& path, const std::string& text, const char* what) {
    if (!save_export(path, text, what)) rc = 1;
  };
  save(out.json, gen_summary_json(run, summary), "JSON summary");
  if (!out.csv_prefix.empty()) {
    save(out.csv_prefix + "_requests.csv", gen_requests_csv(run), "CSV per request");
  }
  save(out.trace, gen_trace_json(run), "Chrome trace, one row of steps; open in Perfetto");
  return rc;
}

}  // namespace batchscope
