// Batchscope's composition root: one executable, a subcommand per job.

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "allocator.h"
#include "demo.h"
#ifdef BATCHSCOPE_WITH_TORCH
#include "profile_cmd.h"
#endif

#ifdef BATCHSCOPE_WITH_QT
#include <QtGlobal>

#include "bench_cmd.h"
#include "export_cmd.h"
#include "gui_cmd.h"
#include "serve_cmd.h"
#include "tune_cmd.h"
#endif
#ifdef BATCHSCOPE_WITH_TORCH
#include "torch_info.h"
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
#endif
#ifdef BATCHSCOPE_WITH_QT
    "  serve     serve a model over HTTP (/infer, KServe v2, /metrics), headless\n"
    "  bench     drive a target with an arrival pattern and record the run\n"
    "  tune      find the batching options that serve a traffic pattern best within a p99\n"
    "            objective: predicted for every configuration, the best confirmed live\n"
    "  export    write the options as a Triton, TF Serving, TorchServe, Ray Serve, Python\n"
    "            engine or Batchscope JSON configuration\n"
    "  import    read a Triton config.pbtxt or Batchscope JSON into Batchscope JSON\n"
#endif
    "\n"
    "Run 'batchscope COMMAND --help' for a command's options.\n";

void print_version() {
  std::printf("batchscope %s\n", BATCHSCOPE_VERSION);
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
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.empty() && (args[0] == "--version" || args[0] == "-V")) {
    print_version();
    return 0;
  }
  std::string command = "demo";
#ifdef BATCHSCOPE_WITH_QT
  if (batchscope::display_available()) command = "gui";
#endif
  if (!args.empty() && args[0].rfind("--", 0) != 0) {
    command = args[0];
    args.erase(args.begin());
  }
  if (command == "demo") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::demo_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_demo(args);
  }
#ifdef BATCHSCOPE_WITH_QT
  if (command == "serve") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::serve_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_serve(argc, argv, args);
  }
  if (command == "gui") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::gui_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_gui(argc, argv, args);
  }
  if (command == "bench") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::bench_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_bench(argc, argv, args);
  }
  if (command == "tune") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::tune_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_tune(args);
  }
  if (command == "export" || command == "import") {
    const bool is_export = command == "export";
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs((is_export ? batchscope::export_help() : batchscope::import_help()).c_str(),
                   stdout);
        return 0;
      }
    }
    return is_export ? batchscope::run_export(args) : batchscope::run_import(args);
  }
#endif
#ifdef BATCHSCOPE_WITH_TORCH
  if (command == "profile") {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::fputs(batchscope::profile_help().c_str(), stdout);
        return 0;
      }
    }
    return batchscope::run_profile(args);
  }
#endif
  std::cerr << "batchscope: unknown command '" << command << "'\n\n" << kUsage;
  return 2;
}
