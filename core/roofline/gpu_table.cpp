// SPDX-License-Identifier: GPL-3.0-or-later
#include "roofline/gpu_table.h"

#include <array>

#include "common/text_out.h"

namespace batchscope {

namespace {

// Dense tensor-core peaks: the vendors quote Hopper's, Ada's and
// Blackwell's with 2:4 sparsity too, and those are twice these. The link
// between GPUs is in each direction (the vendors give both directions'
// sum: NVLink 3 600 GB/s, NVLink 4 900, PCIe Gen4 x16 64, Gen5 128).
// GeForce and RTX PRO parts at their FP32-accumulate rate, as serving
// engines accumulate.
const std::array kGpus{
    GpuSpec{"a100-sxm-40gb", "NVIDIA A100 SXM4 40GB", "ampere", 40, 1555, 312, 312, 0, 300,
            "NVLink 3",
            "NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
            "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (HBM2, "
            "1,555 GB/s, BF16 and FP16 312 TFLOPS dense, NVLink 600 GB/s)",
            std::nullopt},
    GpuSpec{"a100-sxm-80gb", "NVIDIA A100 SXM4 80GB", "ampere", 80, 2039, 312, 312, 0, 300,
            "NVLink 3",
            "NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
            "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (HBM2e, "
            "2,039 GB/s, 312 TFLOPS dense, NVLink 600 GB/s)",
            std::nullopt},
    GpuSpec{"a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", "ampere", 80, 1935, 312, 312, 0, 32,
            "PCIe Gen4 x16",
            "NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
            "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (HBM2e, "
            "1,935 GB/s, 312 TFLOPS dense, PCIe Gen4 64 GB/s; an NVLink bridge pairs two at "
            "600 GB/s)",
            std::nullopt},
    GpuSpec{"h100-sxm", "NVIDIA H100 SXM5 80GB", "hopper", 80, 3350, 989.5, 989.5, 1979, 450,
            "NVLink 4",
            "NVIDIA H100 page, https://www.nvidia.com/en-us/data-center/h100/ (HBM3 3.35 TB/s; "
            "BF16 and FP16 1,979 and FP8 3,958 TFLOPS with sparsity, halved; NVLink 900 GB/s)",
            std::nullopt},
    GpuSpec{"h100-pcie", "NVIDIA H100 PCIe 80GB", "hopper", 80, 2000, 756.5, 756.5, 1513, 64,
            "PCIe Gen5 x16",
            "NVIDIA H100 datasheet (2022, H100 PCIe column) and H100 PCIe product brief "
            "PB-11133-001_v02, https://www.nvidia.com/en-us/data-center/h100/ (HBM2e 2,000 GB/s; "
            "BF16 1,513 and FP8 3,026 TFLOPS with sparsity, halved; PCIe Gen5 128 GB/s; an "
            "NVLink bridge pairs two at 600 GB/s)",
            std::nullopt},
    GpuSpec{"h200", "NVIDIA H200 SXM 141GB", "hopper", 141, 4800, 989.5, 989.5, 1979, 450,
            "NVLink 4",
            "NVIDIA H200 page, https://www.nvidia.com/en-us/data-center/h200/ (HBM3e 4.8 TB/s; "
            "BF16 1,979 and FP8 3,958 TFLOPS with sparsity, halved; NVLink 900 GB/s)",
            std::nullopt},
    GpuSpec{"l40s", "NVIDIA L40S 48GB", "ada", 48, 864, 362.05, 362.05, 733, 32, "PCIe Gen4 x16",
            "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/ (GDDR6 "
            "864 GB/s; BF16 and FP16 362.05, FP8 733 TFLOPS dense; PCIe Gen4 x16 64 GB/s "
            "bidirectional, no NVLink)",
            std::nullopt},
    GpuSpec{"l4", "NVIDIA L4 24GB", "ada", 24, 300, 121, 121, 242.5, 32, "PCIe Gen4 x16",
            "NVIDIA L4 datasheet, https://resources.nvidia.com/en-us-data-center-overview/"
            "l4-gpu-datasheet (GDDR6 300 GB/s; BF16 242 and FP8 485 TFLOPS with sparsity, "
            "halved; PCIe Gen4 x16, no NVLink)",
            std::nullopt},
    GpuSpec{"a10g", "NVIDIA A10G 24GB (AWS G5)", "ampere", 24, 600, 70, 70, 0, 32, "PCIe Gen4 x16",
            "no NVIDIA datasheet: 24 GB GDDR6 at 600 GB/s from https://www.baseten.co/blog/"
            "nvidia-a10-vs-a10g-for-ml-model-inference/ and AWS's G5 pages "
            "(https://aws.amazon.com/ec2/instance-types/g5/); 70 TFLOPS FP16 dense from "
            "cli99/llm-analysis's gpu_configs/a10g-pcie-24gb.json (https://github.com/cli99/"
            "llm-analysis), BF16 taken as FP16 as on every Ampere part; below the A10's 125",
            std::nullopt},
    GpuSpec{"rtx-4090", "NVIDIA GeForce RTX 4090 24GB", "ada", 24, 1008, 165.2, 165.2, 330.3, 32,
            "PCIe Gen4 x16",
            "NVIDIA Ada GPU architecture whitepaper, appendix A table 2, https://"
            "images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf "
            "(GDDR6X 1,008 GB/s; with FP32 accumulate BF16 and FP16 165.2, FP8 330.3 TFLOPS "
            "dense; twice those with FP16 accumulate; PCIe Gen4, no NVLink)",
            std::nullopt},
    GpuSpec{"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell WS 96GB", "blackwell", 96, 1792, 503.8,
            503.8, 1007.6, 64, "PCIe Gen5 x16",
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet, https://www.nvidia.com/"
            "content/dam/en-zz/Solutions/data-center/rtx-pro-6000-blackwell-workstation-edition/"
            "workstation-blackwell-rtx-pro-6000-workstation-edition-nvidia-us-3519208-web.pdf "
            "(GDDR7 1,792 GB/s, PCIe 5.0 x16) and the RTX Blackwell PRO architecture "
            "whitepaper v1.0, appendix A (BF16 with FP32 accumulate 503.8 TFLOPS dense); FP16 "
            "taken as BF16, FP8 as twice it, which the datasheet's 4,000 FP4 TOPS with sparsity "
            "agree with",
            std::nullopt},
};

}  // namespace

double GpuSpec::tflops(std::string_view dtype) const {
  if (dtype == "bf16") return tflops_bf16;
  if (dtype == "fp16") return tflops_fp16;
  if (dtype == "fp8") return tflops_fp8;
  return 0;
}

std::string GpuSpec::describe() const {
  std::string out;
  append_format(out, "%s: %.0f GB at %.0f GB/s, bf16 %.0f TFLOPS", title.c_str(), memory_gb,
                bandwidth_gbs, tflops_bf16);
  if (tflops_fp8 > 0) append_format(out, ", fp8 %.0f", tflops_fp8);
  if (interconnect_gbs > 0) {
    append_format(out, ", %s %.0f GB/s", interconnect.c_str(), interconnect_gbs);
  }
  return out;
}

std::span<const GpuSpec> gpu_table() { return kGpus; }

Expected<GpuSpec> gpu_named(std::string_view name) {
  std::string names;
  for (const GpuSpec& g : kGpus) {
    if (g.name == name) return g;
    names += (names.empty() ? "" : ", ") + g.name;
  }
  return invalid_argument("--gpu \"" + std::string(name) + "\" is not in the table (" + names +
                          "); --gpu-spec FILE takes another (batchscope gpus --json shows the "
                          "form)");
}

}  // namespace batchscope
