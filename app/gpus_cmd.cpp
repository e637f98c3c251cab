// SPDX-License-Identifier: GPL-3.0-or-later
#include <cstdio>

#include "app/cli_args.h"
#include "app/commands.h"
#include "app/run_output.h"
#include "common/text_out.h"
#include "roofline/gpu_table.h"

namespace batchscope {

std::string gpus_help() {
  return "usage: batchscope gpus [--json] [--gpu-spec FILE]\n"
         "Lists the GPUs a language model's serving can be planned for without one at hand\n"
         "(bench --target predict with --model-config and --gpu): each one's memory,\n"
         "memory bandwidth, dense tensor peaks (bf16, fp16, fp8; without sparsity), the\n"
         "link between GPUs, and the vendor documents the figures come from. --json prints\n"
         "them in the form --gpu-spec reads; --gpu-spec FILE checks and shows such a file.\n";
}

int run_gpus(const Args& args) {
  const Fail fail{"gpus"};
  auto flags = cli::parse_flags(args, {"json"});
  if (!flags) return fail(flags.error().message);
  const bool json = flags->erase("json") > 0;
  std::vector<GpuSpec> gpus(gpu_table().begin(), gpu_table().end());
  if (auto it = flags->find("gpu-spec"); it != flags->end()) {
    auto g = read_gpu_spec(it->second);
    if (!g) return fail(g.error().message);
    gpus.assign(1, *g);
    flags->erase(it);
  }
  if (!flags->empty()) return fail("unknown flag --" + flags->begin()->first);
  if (json) {
    std::string out = "[";
    for (size_t i = 0; i < gpus.size(); ++i) out += (i ? ",\n" : "\n") + gpu_spec_json(gpus[i]);
    std::printf("%s\n]\n", out.c_str());
    return 0;
  }
  std::printf("%-14s %-36s %5s %6s %7s %7s %7s  %s\n", "name", "GPU", "GB", "GB/s", "bf16", "fp16",
              "fp8", "between GPUs (GB/s each way)");
  auto figure = [](double v) {
    std::string out = "-";
    if (v > 0) out = "", append_format(out, "%.6g", v);
    return out;
  };
  for (const GpuSpec& g : gpus) {
    std::printf("%-14s %-36s %5s %6s %7s %7s %7s  %s %s\n", g.name.c_str(), g.title.c_str(),
                figure(g.memory_gb).c_str(), figure(g.bandwidth_gbs).c_str(),
                figure(g.tflops_bf16).c_str(), figure(g.tflops_fp16).c_str(),
                figure(g.tflops_fp8).c_str(), g.interconnect.c_str(),
                figure(g.interconnect_gbs).c_str());
  }
  std::printf("\nDense tensor TFLOPS (half the vendors' figures with sparsity). Sources:\n");
  for (const GpuSpec& g : gpus) std::printf("  %s: %s\n", g.name.c_str(), g.source.c_str());
  return 0;
}

}  // namespace batchscope
