// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope bench` for a generative model: generation traffic (lengths
// from distributions or a trace, any arrival pattern) against the engine in
// process, this process's listener, or a URL, streamed; reports TTFT, ITL,
// end-to-end latency, tokens/s and goodput, with JSON, CSV and Chrome trace
// exports.

#include <map>
#include <string>

namespace batchscope {

int run_gen_bench(int argc, char** argv, std::map<std::string, std::string> flags);
std::string gen_bench_help();

}  // namespace batchscope
