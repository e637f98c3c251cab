// SPDX-License-Identifier: GPL-3.0-or-later
// Batchscope's composition root: one executable, a subcommand per job.

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/help_pages.h"
#include "common/allocator.h"
#include "common/build_info.h"
#include "model/model_paths.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch/torch_info.h"
#endif
#ifdef BATCHSCOPE_WITH_QT
#include <QtGlobal>
#endif

namespace {

using batchscope::Args;

// Every command: its name, what it does (the usage's line), its --help text
// and how it runs.
struct Command {
  const char* name;
  const char* summary;
  std::string (*help)();
  int (*run)(int argc, char** argv, const Args& args);
};

const std::vector<Command>& commands() {
  using namespace batchscope;
  static const std::vector<Command> list = {
#ifdef BATCHSCOPE_WITH_QT
      {"gui",
       "the workbench window: live plots, batching knobs, traffic (the default\n"
       "where a display is available)",
       gui_help, [](int c, char** v, const Args& a) { return run_gui(c, v, a); }},
#endif
      {"demo",
       "serve synthetic traffic through the engine and print a live summary each\n"
       "second (the default without a display)",
       demo_help, [](int, char**, const Args& a) { return run_demo(a); }},
#ifdef BATCHSCOPE_WITH_TORCH
      {"profile", "measure a model's batch cost curve t(b) and the speedup batching allows",
       profile_help, [](int, char**, const Args& a) { return run_profile(a); }},
      {"describe",
       "write the JSON sidecar of a TorchScript model from its forward() and one\n"
       "forward pass on zeros",
       describe_help, [](int, char**, const Args& a) { return run_describe(a); }},
#endif
#ifdef BATCHSCOPE_WITH_QT
      {"gpus", "the GPUs a language model's serving can be planned for, with their sources",
       gpus_help, [](int, char**, const Args& a) { return run_gpus(a); }},
      {"serve", "serve a model over HTTP (/infer, KServe v2, /metrics), headless", serve_help,
       [](int c, char** v, const Args& a) { return run_serve(c, v, a); }},
#endif
      {"bench", "drive a target with an arrival pattern and record the run", bench_help,
       [](int c, char** v, const Args& a) { return run_bench(c, v, a); }},
      {"tune",
       "find the batching options that serve a traffic pattern best within a p99\n"
       "objective: predicted for every configuration, the best confirmed live",
       tune_help, [](int, char**, const Args& a) { return run_tune(a); }},
      {"runs", "the run history: list, show, compare, export, remove and import kept runs",
       runs_help, [](int, char**, const Args& a) { return run_runs(a); }},
      {"report", "kept runs as one self-contained HTML page to share", report_help,
       [](int, char**, const Args& a) { return run_report(a); }},
#ifdef BATCHSCOPE_WITH_QT
      {"export",
       "write the options as a Triton, TF Serving, TorchServe, Ray Serve, Python\n"
       "engine or Batchscope JSON configuration",
       export_help, [](int, char**, const Args& a) { return run_export(a); }},
      {"import", "read a Triton config.pbtxt or Batchscope JSON into Batchscope JSON", import_help,
       [](int, char**, const Args& a) { return run_import(a); }},
#endif
  };
  return list;
}

// The top-level --help: each command with its summary, continued lines indented.
std::string usage() {
  std::string u =
      "usage: batchscope [--help] [--version] [COMMAND [ARGS]]\n\n"
      "Batchscope is a workbench for dynamic batching of model inference.\n\nCommands:\n";
  for (const Command& c : commands()) {
    std::string name = c.name;
    name.resize(10, ' ');
    std::string summary = c.summary;
    for (size_t at = 0; (at = summary.find('\n', at)) != std::string::npos; at += 13) {
      summary.insert(at + 1, 12, ' ');
    }
    u += "  " + name + summary + "\n";
  }
  return u +
         "\nRun 'batchscope COMMAND --help' for a command's options. --man prints the manual\n"
         "page and --bash-completion the bash completion script, both made from these texts.\n";
}

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

std::vector<batchscope::CommandHelp> command_helps() {
  std::vector<batchscope::CommandHelp> helps;
  for (const Command& c : commands()) helps.push_back({c.name, c.help()});
  return helps;
}

const Command* find(const std::string& name) {
  for (const Command& c : commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  const std::string first = args.empty() ? "" : args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    // `help COMMAND` is `COMMAND --help`; an unknown one is refused by name.
    if (first == "help" && args.size() > 1) {
      if (const Command* c = find(args[1])) {
        std::fputs(c->help().c_str(), stdout);
        return 0;
      }
      std::cerr << "batchscope help: unknown command '" << args[1] << "'\n\n" << usage();
      return 2;
    }
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    print_version();
    return 0;
  }
  if (first == "--man") {
    std::fputs(batchscope::man_page(batchscope::build_version(), usage(), command_helps()).c_str(),
               stdout);
    return 0;
  }
  if (first == "--bash-completion") {
    const std::vector<std::string> top = {"--help", "--version", "--man", "--bash-completion"};
    std::fputs(batchscope::bash_completion(command_helps(), top).c_str(), stdout);
    return 0;
  }
  std::string name = "demo";
#ifdef BATCHSCOPE_WITH_QT
  if (batchscope::display_available()) name = "gui";
#endif
  if (!first.empty() && first.rfind("--", 0) != 0) {
    name = first;
    args.erase(args.begin());
  }
  const Command* c = find(name);
  if (!c) {
    std::cerr << "batchscope: unknown command '" << name << "'\n\n" << usage();
    return 2;
  }
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(c->help().c_str(), stdout);
      return 0;
    }
  }
  return c->run(argc, argv, args);
}
