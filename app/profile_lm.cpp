// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <iostream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "tuning/gen_predictor.h"
#include "tuning/step_profile.h"

namespace batchscope {

std::string profile_lm_help() {
  return "On a generative model (--model M.pt whose sidecar says generative, or --synthetic-lm\n"
         "S,T) profile measures one engine step's cost over a grid, on the model alone after\n"
         "its warm-up: prefill chunks of 8, 16, 32, ... prompt tokens up to\n"
         "--max-batched-tokens (default 512), and decodes of 1, 2, 4, ... sequences up to\n"
         "--max-seqs (default 32) with each sequence at 8, 32, 128, ... cached positions up\n"
         "to the context, --runs times each (default 15). It prints each point's p50, p90\n"
         "and the fit's price, and fits step_us + token_us * decodes + context_us * cached\n"
         "tokens read + prefill_token_us * prompt tokens. The points' medians are kept as a\n"
         "grid, which prices the steps it spans (decodes by decode count and position, a\n"
         "prefill by tokens, joined by straight lines), with each step's spread about its\n"
         "point.\n"
         "--json writes that as a step cost file (version 4) for bench --target predict\n"
         "--cost and tune --cost. The engine's own time between steps is not the model's:\n"
         "a profile has none, and a live run adds it to the kept cost.\n";
}

int run_profile_lm(std::map<std::string, std::string> flags) {
  const Fail fail{"profile"};
  auto choice = take_lm_flags(flags, "");
  if (!choice) return fail(choice.error().message);
  StepProfileOptions o;
  std::string json_path;
  if (Status s = cli::take_fields(
          flags, {cli::text("json", json_path), cli::number("max-seqs", 1, 65'536, o.max_seqs),
                  cli::number("max-batched-tokens", 1, 65'536, o.max_batched_tokens),
                  cli::number("runs", 1, 10'000, o.runs)});
      !s) {
    return fail(s.message());
  }
  if (!flags.empty()) {
    return fail("unknown option --" + flags.begin()->first +
                " for a generative model (see batchscope profile --help)");
  }
  auto model = LocalModel::open(*choice);
  if (!model) return fail(model.error().message, 1);
  auto lm = model->lm();
  if (!lm) return fail(lm.error().message, 1);
  const LmInfo& m = lm->runner->info();
  std::printf("Model %s on %s: context %d, cache %d blocks of %d; %u runs a point\n\n",
              m.name.c_str(), lm->device.c_str(), m.context_length, m.num_blocks, m.block_size,
              o.runs);
  std::printf("%8s %9s %8s %12s %12s\n", "decodes", "position", "prompt", "p50 us", "p90 us");
  SteadyClock clock;
  auto p = profile_steps(*lm->runner, o, clock, [](const StepProfilePoint& q) {
    std::printf("%8u %9u %8u %12.1f %12.1f\n", q.decodes, q.position, q.prefill_tokens, q.p50_us,
                q.p90_us);
    std::fflush(stdout);
  });
  if (!p) return fail(p.error().message, 1);
  std::printf("\nfit over %llu steps: %s\n", static_cast<unsigned long long>(p->cost.steps),
              GenStepCost::of(p->cost).text().c_str());
  double worst = 0;
  for (const StepProfilePoint& q : p->points) {
    if (q.fitted_us > 0) worst = std::max(worst, std::abs(q.p50_us / q.fitted_us - 1));
  }
  std::printf(
      "the line is off by up to %.1f%% from a point's p50; predictions read the grid of "
      "the %zu points, and the line beyond them\n",
      100 * worst, p->points.size());
  if (!json_path.empty() &&
      !save_export(json_path, step_cost_json(p->cost, m.name, lm->device), "step cost")) {
    return 1;
  }
  return 0;
}

}  // namespace batchscope
