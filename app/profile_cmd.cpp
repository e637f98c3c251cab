// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "app/run_output.h"
#include "model/model_paths.h"
#include "model/model_profile.h"
#include "torch/profile.h"

namespace batchscope {
namespace {

const Fail fail{"profile"};

}  // namespace

std::string profile_help() {
  return "usage: batchscope profile --model PATH [--device cpu|cuda:N] [--max-batch N]\n"
         "                          [--threads N] [--blas-threads N] [--seconds-per-point S]\n"
         "                          [--lanes N] [--lengths L,L,...|none] [--json FILE]\n"
         "       batchscope profile --model LM.pt|--synthetic-lm S,T [--device cpu|cuda:N]\n"
         "                          [--max-seqs N] [--max-batched-tokens N] [--runs N]\n"
         "                          [--json FILE]\n"
         "Measures the model's batch cost t(b) for b = 1, 2, 4, ... up to --max-batch (default:\n"
         "its max_batch_size) as the engine runs batches (docs/bench.md): each size is timed\n"
         "in windows until three in a row agree within 10% with the thread on a core half\n"
         "the time (at most 10); a size that does not settle says why, naming what else used\n"
         "the cores. t(b) is made monotone and fitted as a + c*b; it prints each size's t(b),\n"
         "per-item time, speedup and whether it settled, a and c, the asymptotic speedup\n"
         "1 + a/c, and the BLAS and threads. --json writes it as a cost file. --threads:\n"
         "LibTorch's intra-op threads (default 1); --blas-threads: OpenBLAS's (default all).\n"
         "--lanes N measures t(b) again with 2..N copies running at once, as engine lanes;\n"
         "predictions price a batch by the lanes busy when it starts. A Python model with\n"
         "preprocess: a request's preprocess in its pool (1..cores+1 busy) and in a lane.\n"
         "A model whose inputs vary in length is measured again at padded lengths, t(b, L):\n"
         "--lengths 16,64,256 (default 16, 32, 64, ... up to its largest), or none.\n\n" +
         profile_lm_help();
}

int run_profile(const std::vector<std::string>& args) {
  auto flags = cli::parse_flags(args);
  if (!flags) return fail(flags.error().message);
  if (wants_lm(*flags, "")) return run_profile_lm(std::move(*flags));
  ProfileOptions o;
  std::string model, json_path, lengths;
  if (Status s = cli::take_fields(
          *flags,
          {cli::text("model", model), cli::text("device", o.device), cli::text("json", json_path),
           cli::number("max-batch", 1, 1'000'000, o.max_batch),
           cli::number("threads", 1, 1024, o.intra_op_threads),
           cli::number("blas-threads", 1, 1024, o.blas_threads),
           cli::number("lanes", 1, 64, o.lanes), cli::text("lengths", lengths),
           cli::number("seconds-per-point", 0, 3600, o.seconds_per_point)});
      !s) {
    return fail(s.message());
  }
  if (!model.empty()) model = find_model(model);
  ModelChoice choice;
  choice.path = model;
  choice.device = o.device;
  if (Status s = take_python_flags(*flags, choice);
      !s || !(s = cli::no_flags_left(*flags, "profile"))) {
    return fail(s.message());
  }
  if (lengths == "none") {
    o.length_grid = false;
  } else if (!lengths.empty()) {
    auto l = cli::parse_counts("lengths", lengths, 1, 1'000'000);
    if (!l) return fail(l.error().message);
    o.lengths = *l;
  }
  if (model.empty()) return fail("--model PATH is required (for example models/mlp.pt)");
  auto r = profile_choice(choice, o);
  if (!r) return fail(r.error().message, 1);
  std::printf(
      "Model %s on %s; BLAS %s, %d BLAS thread(s), %d intra-op and %d inter-op thread(s)\n\n",
      r->model.c_str(), r->device.c_str(), r->blas.c_str(), r->blas_threads, r->intra_op_threads,
      r->inter_op_threads);
  std::printf("%8s %12s %12s %14s %9s %6s  %s\n", "batch", "t(b) us", "measured us", "per item us",
              "speedup", "runs", "settled (windows, CPU share, window gap)");
  for (const ProfilePoint& p : r->points) {
    std::printf("%8u %12.1f %12.1f %14.2f %8.2fx %6d  %s (%d, %.0f%%, %.1f%%)\n", p.batch,
                p.median_us, p.measured_us, p.per_item_us, p.speedup, p.runs,
                p.settled ? "yes" : "NO", p.windows, 100 * p.cpu_share, 100 * p.window_gap);
  }
  if (!r->competing.empty()) {
    std::printf("\nthe machine was busy: %s.\n", r->competing.c_str());
  }
  if (!r->settled) {
    std::printf(
        "\nnot settled at %s.\nThese sizes' times are not the model's; profile again on a quiet "
        "machine.\n",
        unsettled_text(r->points).c_str());
  }
  std::printf("\nfit: t(b) = %.1f + %.2f * b us", r->a_us, r->c_us);
  if (!r->settled && r->asymptotic_speedup <= 0) {
    std::printf(
        "; fewer than 2 sizes settled or their fit has no fixed cost: no speedup claimed\n");
  } else if (r->asymptotic_speedup > 0) {
    std::printf("; asymptotic speedup 1 + a/c = %.1fx\n", r->asymptotic_speedup);
  } else if (r->c_us <= 0) {
    std::printf("; no per-item cost measured, so no asymptotic speedup\n");
  } else {
    std::printf("; no fixed cost for a batch to share (a <= 0): batching buys little here\n");
  }
  for (const LanesProfile& lp : r->lanes) {
    std::printf("\n%u lanes at once: %8s %12s %22s\n", lp.lanes, "batch", "t(b) us",
                "throughput over 1 lane");
    for (const ProfilePoint& p : lp.points) {
      std::printf("%24u %12.1f %21.2fx\n", p.batch, p.median_us, p.speedup);
    }
  }
  if (!r->preprocess_pool_us.empty()) {
    // Quantiles p0, p1/64, ..., p100: the median and p95 (61/64).
    auto at = [](const std::vector<double>& q, size_t i) { return q.size() == 65 ? q[i] : 0.0; };
    std::printf("\npreprocess, one request, median and p95 us: in a lane %.0f, %.0f",
                at(r->preprocess_lane_us, 32), at(r->preprocess_lane_us, 61));
    for (size_t k = 0; k < r->preprocess_pool_us.size(); ++k) {
      const std::vector<double>& q = r->preprocess_pool_us[k];
      std::printf("; in the pool, %zu busy: %.0f, %.0f", k + 1, at(q, 32), at(q, 61));
    }
    std::printf("\n");
  }
  if (!r->grid_lengths.empty()) {
    std::printf("\nt(b, L) us, by padded length L (t(b) above is at L = %u):\n%8s",
                r->reference_length, "batch");
    for (uint32_t l : r->grid_lengths) std::printf(" %10s", ("L=" + std::to_string(l)).c_str());
    std::printf("\n");
    for (size_t row = 0; row < r->points.size(); ++row) {
      std::printf("%8u", r->points[row].batch);
      for (size_t c = 0; c < r->grid_lengths.size(); ++c) {
        std::printf(" %10.1f", r->grid_us[row * r->grid_lengths.size() + c]);
      }
      std::printf("\n");
    }
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << profile_json(*r);
    if (!out) return fail("cannot write " + json_path, 1);
  }
  return 0;
}

}  // namespace batchscope
