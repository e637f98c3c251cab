// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The machine a figure was measured on, read from /proc: its CPU model and
// cores, host, kernel and allocator, and the NVIDIA GPUs and driver where the
// driver is loaded. Built in every configuration (it needs neither SQLite nor
// OpenSSL), so that a tune's result names its hardware on a machine with
// LibTorch alone.
// Thread-safety: free functions; they read /proc.

#include <string>

namespace batchscope {

// {"cpu": "Intel(R) Xeon(R) ...", "cores": 2, "host": "...", "kernel": "...",
//  "allocator": "jemalloc"}, and where the NVIDIA driver is loaded
//  "nvidia_driver": "550.54.15", "gpus": ["NVIDIA H200 (0000:3b:00.0)"].
// `proc` is where /proc is (tests give another).
std::string machine_json(const std::string& proc = "/proc");

// `json_object` (the text of a JSON object, such as a tune's result) with
// "measured_on": {"device": DEVICE, "machine": machine_json(proc)} as its
// last member; unchanged when it does not end in '}'.
std::string with_measured_on(std::string json_object, const std::string& device,
                             const std::string& proc = "/proc");

}  // namespace batchscope
