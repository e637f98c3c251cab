// SPDX-License-Identifier: GPL-3.0-or-later
// The executable's commands: each one's entry point (given the arguments
// after its name; the exit code) and its --help text, which main.cpp's
// table lists, and the parts a command hands to another (a language model's
// bench, tune and profile; runs' pages).
// Thread-safety: each runs on the main thread.

#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace batchscope {

class History;
struct ExportFile;
using Flags = std::map<std::string, std::string>;
using Args = std::vector<std::string>;

// gui: the workbench window over an engine and a model (a language model's
// generation view). True when a window can be shown: an X or Wayland
// display, or a Qt platform set.
int run_gui(int argc, char** argv, const Args& args);
std::string gui_help();
bool display_available();

// demo: Poisson traffic through the engine and a synthetic model, a line a
// second, the options retuned live half way; checks every admitted request
// was answered once.
int run_demo(const Args& args);
std::string demo_help();

// profile: a model's batch cost curve t(b), its fit and the speedup batching
// allows, or a language model's step cost over a grid (profile_lm.cpp).
int run_profile(const Args& args);
std::string profile_help();
int run_profile_lm(Flags flags);
std::string profile_lm_help();

// describe: the JSON sidecar of a TorchScript model that has none, from its
// forward arguments and one forward pass on zeros.
int run_describe(const Args& args);
std::string describe_help();

// gpus: the GPU table a language model's serving is planned on (core/roofline).
int run_gpus(const Args& args);
std::string gpus_help();

// serve: a model behind the HTTP listener, headless, until SIGINT or SIGTERM.
int run_serve(int argc, char** argv, const Args& args);
std::string serve_help();

// bench: a target driven by an arrival pattern, the run recorded, printed
// and exported; a language model's in gen_bench.cpp.
int run_bench(int argc, char** argv, const Args& args);
std::string bench_help();
int run_gen_bench(int argc, char** argv, Flags flags);
std::string gen_bench_help();

// tune: the batching options that serve the traffic best within an
// objective (core/model's tensor_tune.h, lm_tune.h), printed, saved and
// exported.
int run_tune(const Args& args);
std::string tune_help();
int run_gen_tune(Flags flags);
std::string gen_tune_help();

// runs: the run history (list, show, compare, export, rm, import; ids for
// tab completion); report: kept runs as one self-contained HTML page.
int run_runs(const Args& args);
std::string runs_help();
int run_report(const Args& args);
std::string report_help();
// runs list (--model, --kind, --since and --grep filter it), show and
// compare (`plot`, when given: both runs' latency fans as a PNG).
int runs_list(History& h, Flags& flags);
int runs_show(History& h, int64_t id);
int runs_compare(History& h, int64_t a, int64_t b, const std::string& plot);

// export: the options as a production server's configuration; import: a
// Triton config.pbtxt, vLLM YAML or Batchscope JSON into Batchscope JSON.
int run_export(const Args& args);
std::string export_help();
int run_import(const Args& args);
std::string import_help();
// Writes an export's files to stdout (several each under a "==> NAME <=="
// line), or to `out`: one file to that path (or into it, if it is a folder),
// several into the folder `out`, made if missing. Says what it wrote; 0, or 1
// after saying why on stderr as "batchscope COMMAND: ...".
int write_export_files(const char* command, const std::vector<ExportFile>& files,
                       const std::string& out);

}  // namespace batchscope
