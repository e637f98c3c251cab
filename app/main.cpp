// SPDX-License-Identifier: GPL-3.0-or-later
// Batchscope's composition root: one executable, a subcommand per job.

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/build_info.h"
#include "app/demo.h"
#include "app/help_pages.h"
#include "app/install_paths.h"
#include "common/allocator.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "app/describe_cmd.h"
#include "app/profile_cmd.h"
#endif

#include "app/bench_cmd.h"
#include "app/runs_cmd.h"
#include "app/tune_cmd.h"
#ifdef BATCHSCOPE_WITH_QT
#include <QtGlobal>

#include "app/export_cmd.h"
#include "app/gui_cmd.h"
#include "app/serve_cmd.h"
#endif
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_info.h"
#endif

namespace {

const char* kUsage =
    "usage: batchscope [--help] [--version] [COMMAND [ARGS]]\n"
    "\n"
    "Batchscope is a workbench for dynamic batching of model inference.\n"
    "\n"
    "Commands:\n"
#ifdef BATCHSCOPE_WITH_QT
    "  gui       the workbench window: live plots, batching knobs, traffic (the default\n"
    "            where a display is available)\n"
#endif
    "  demo      serve synthetic traffic through the engine and print a live summary each\n"
    "            second (the default without a display)\n"
#ifdef BATCHSCOPE_WITH_TORCH
    "  profile   measure a model's batch cost curve t(b) and the speedup batching allows\n"
    "  describe  write the JSON sidecar of a TorchScript model from its forward() and one\n"
    "            forward pass on zeros\n"
#endif
#ifdef BATCHSCOPE_WITH_QT
    "  serve     serve a model over HTTP (/infer, KServe v2, /metrics), headless\n"
#endif
    "  bench     drive a target with an arrival pattern and record the run\n"
    "  tune      find the batching options that serve a traffic pattern best within a p99\n"
    "            objective: predicted for every configuration, the best confirmed live\n"
    "  runs      the run history: list, show, compare, export, remove and import kept runs\n"
    "  report    kept runs as one self-contained HTML page to share\n"
#ifdef BATCHSCOPE_WITH_QT
    "  export    write the options as a Triton, TF Serving, TorchServe, Ray Serve, Python\n"
    "            engine or Batchscope JSON configuration\n"
    "  import    read a Triton config.pbtxt or Batchscope JSON into Batchscope JSON\n"
#endif
    "\n"
    "Run 'batchscope COMMAND --help' for a command's options. --man prints the manual\n"
    "page and --bash-completion the bash completion script, both made from these texts.\n";

void print_version() {
  std::printf("batchscope %s\n", batchscope::build_label().c_str());
  std::fputs(batchscope::licence_notice().c_str(), stdout);
#ifdef BATCHSCOPE_WITH_QT
  std::printf("Qt %s\n", qVersion());
#endif
#ifdef BATCHSCOPE_WITH_TORCH
  const batchscope::TorchInfo t = batchscope::torch_info();
  std::printf("LibTorch %s, intra-op threads %d, inter-op threads %d\n", t.torch_version.c_str(),
              t.intra_op_threads, t.inter_op_threads);
  std::printf("BLAS: %s (%s)\n", t.blas_name.c_str(),
              t.blas_library.empty() ? "not loaded" : t.blas_library.c_str());
#else
  std::printf("built without LibTorch\n");
#endif
  std::printf("Allocator: %s\n", batchscope::allocator_name().c_str());
  const std::string models = batchscope::models_dir();
  std::printf("Models: %s\n", models.empty()
                                  ? "none found (set BATCHSCOPE_MODELS to a folder of .pt files)"
                                  : models.c_str());
}

// Every command: its name, its --help text and how it runs.
struct Command {
  const char* name;
  std::string (*help)();
  int (*run)(int argc, char** argv, const std::vector<std::string>& args);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
#ifdef BATCHSCOPE_WITH_QT
      {"gui", batchscope::gui_help,
       [](int argc, char** argv, const std::vector<std::string>& a) {
         return batchscope::run_gui(argc, argv, a);
       }},
#endif
      {"demo", batchscope::demo_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_demo(a); }},
#ifdef BATCHSCOPE_WITH_TORCH
      {"profile", batchscope::profile_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_profile(a); }},
      {"describe", batchscope::describe_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_describe(a); }},
#endif
#ifdef BATCHSCOPE_WITH_QT
      {"serve", batchscope::serve_help,
       [](int argc, char** argv, const std::vector<std::string>& a) {
         return batchscope::run_serve(argc, argv, a);
       }},
#endif
      {"bench", batchscope::bench_help,
       [](int argc, char** argv, const std::vector<std::string>& a) {
         return batchscope::run_bench(argc, argv, a);
       }},
      {"tune", batchscope::tune_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_tune(a); }},
      {"runs", batchscope::runs_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_runs(a); }},
      {"report", batchscope::report_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_report(a); }},
#ifdef BATCHSCOPE_WITH_QT
      {"export", batchscope::export_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_export(a); }},
      {"import", batchscope::import_help,
       [](int, char**, const std::vector<std::string>& a) { return batchscope::run_import(a); }},
#endif
  };
  return list;
}

std::vector<batchscope::CommandHelp> command_helps() {
  std::vector<batchscope::CommandHelp> helps;
  for (const Command& c : commands()) helps.push_back({c.name, c.help()});
  return helps;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    // `help COMMAND` is `COMMAND --help`; an unknown one is refused by name.
    if (args[0] == "help" && args.size() > 1) {
      for (const Command& c : commands()) {
        if (args[1] != c.name) continue;
        std::fputs(c.help().c_str(), stdout);
        return 0;
      }
      std::cerr << "batchscope help: unknown command '" << args[1] << "'\n\n" << kUsage;
      return 2;
    }
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.empty() && (args[0] == "--version" || args[0] == "-V")) {
    print_version();
    return 0;
  }
  if (!args.empty() && args[0] == "--man") {
    std::fputs(batchscope::man_page(batchscope::build_version(), kUsage, command_helps()).c_str(),
               stdout);
    return 0;
  }
  if (!args.empty() && args[0] == "--bash-completion") {
    const std::vector<std::string> top = {"--help", "--version", "--man", "--bash-completion"};
    std::fputs(batchscope::bash_completion(command_helps(), top).c_str(), stdout);
    return 0;
  }
  std::string name = "demo";
#ifdef BATCHSCOPE_WITH_QT
  if (batchscope::display_available()) name = "gui";
#endif
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    name = args[0];
    args.erase(args.begin());
  }
  for (const Command& c : commands()) {
    if (name != c.name) continue;
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(c.help().c_str(), stdout);
        return 0;
      }
    }
    return c.run(argc, argv, args);
  }
  std::cerr << "batchscope: unknown command '" << name << "'\n\n" << kUsage;
  return 2;
}
