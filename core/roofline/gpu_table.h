// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// GPUs by their published specifications: what a step cost on a GPU this
// machine does not have is worked out from (roofline_cost.h). The table
// carries the data-centre and workstation GPUs language models are served
// on, every figure with the vendor's document it comes from; --gpu-spec
// reads another in the same JSON form (gpu_spec_json()).
// Thread-safety: the table is constant; values and free functions.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace batchscope {

// The roofline step cost's constants (roofline_cost.h): a handful per GPU
// family, fitted on published measurements; a --gpu-spec file may give its own.
struct RooflineConstants {
  double compute_efficiency = 1;  // of the dense peak
  double memory_efficiency = 1;   // of the memory bandwidth
  double overhead_us = 0;         // the engine's per step (scheduling, sampling, launches)
  double allreduce_us = 0;        // latency of one all-reduce, beside its bytes
  // The serving stack's own time per request, outside the steps (its
  // front end, tokenizing, streaming): added to every TTFT and end.
  double request_us = 0;
  std::string fitted_on;  // the published measurements they were fitted on
};

struct GpuSpec {
  std::string name;          // "h100-sxm", as --gpu takes it
  std::string title;         // "NVIDIA H100 SXM5 80GB"
  std::string family;        // "ampere", "ada", "hopper" or "blackwell": the step cost's constants
  double memory_gb = 0;      // as the vendor states it (GB)
  double bandwidth_gbs = 0;  // memory bandwidth, GB/s
  double tflops_bf16 = 0;    // dense tensor-core peaks, TFLOPS (without sparsity)
  double tflops_fp16 = 0;
  double tflops_fp8 = 0;        // 0: no FP8 tensor cores
  double interconnect_gbs = 0;  // between GPUs, GB/s in each direction
  std::string interconnect;     // "NVLink 4", "PCIe Gen4 x16"
  std::string source;           // where the figures come from
  // A --gpu-spec file's own constants; none: its family's.
  std::optional<RooflineConstants> constants;

  // The dense peak at `dtype` ("bf16", "fp16", "fp8"), TFLOPS; 0 where it has none.
  double tflops(std::string_view dtype) const;
  // "NVIDIA H100 SXM5 80GB: 80 GB at 3350 GB/s, bf16 989 TFLOPS, fp8 1979, NVLink 4 450 GB/s"
  std::string describe() const;
};

// The built-in table, in the order `batchscope gpus` lists it.
std::span<const GpuSpec> gpu_table();
// The table's entry named `name`, or an error listing the names.
Expected<GpuSpec> gpu_named(std::string_view name);
// A GPU from JSON {"name", "title", "family", "memory_gb", "bandwidth_gbs",
// "tflops_bf16", "tflops_fp16", "tflops_fp8", "interconnect_gbs",
// "interconnect", "source"} (tflops_fp8 and interconnect may be left out),
// and "constants": {"compute_efficiency", "memory_efficiency" (each in
// (0, 1]), "overhead_us", "allreduce_us", "request_us" (0 to 1e6; the last
// may be left out), "fitted_on"} where its
// own are known; and the file holding it.
Expected<GpuSpec> parse_gpu_spec(std::string_view json, const std::string& where);
Expected<GpuSpec> read_gpu_spec(const std::string& path);
std::string gpu_spec_json(const GpuSpec& gpu);

}  // namespace batchscope
