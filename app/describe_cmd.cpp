// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "app/cli_args.h"
#include "app/run_output.h"
#include "model/model_paths.h"
#include "torch/describe.h"
#include "torch/metadata_json.h"

namespace batchscope {

std::string describe_help() {
  return "usage: batchscope describe --model PATH [--input NAME:DTYPE:SHAPE ...]\n"
         "                           [--max-batch-size N] [--name NAME] [--description TEXT]\n"
         "                           [--force] [--print]\n"
         "Writes the JSON sidecar (NAME.json) that every command needs beside a TorchScript\n"
         "model NAME.pt. It reads the argument names of the model's forward(), takes one\n"
         "--input per argument (its KServe v2 datatype and its shape without the batch\n"
         "dimension: --input image:FP32:3,32,32), runs forward once on zeros at batch sizes 1\n"
         "and 2, and records the outputs it returned (a tensor: 'output'; a tuple:\n"
         "'output_0', 'output_1', ...; a dict: its keys) with their datatypes and shapes.\n"
         "An argument without --input is asked for when the input is a terminal; otherwise\n"
         "the error names each one. A forward pass that fails prints LibTorch's message.\n"
         "An argument with a default may be left out, with every argument after it.\n"
         "--max-batch-size is the largest batch the model accepts (default 64). The sidecar\n"
         "goes beside the model, or, when that folder cannot be written, into\n"
         "$XDG_CONFIG_HOME/batchscope/sidecars/ under the model's absolute path, where every\n"
         "command looks too. An existing sidecar is kept unless --force; --print writes the\n"
         "JSON to standard output instead of a file.\n";
}

namespace {

const Fail fail{"describe"};

// Asks on the terminal for each required argument not given, until its
// answer parses. False at end of input.
bool ask_missing(const std::vector<ForwardArgument>& args, std::vector<TensorSpec>& inputs) {
  for (const ForwardArgument& a : args) {
    if (a.has_default) break;
    bool given = false;
    for (const TensorSpec& t : inputs) given = given || t.name == a.name;
    while (!given) {
      std::cerr << "input '" << a.name << "' (" << a.type
                << "): DTYPE:SHAPE without the batch dimension, e.g. FP32:3,224,224: "
                << std::flush;
      std::string line;
      if (!std::getline(std::cin, line)) return false;
      auto spec = parse_input_spec(a.name + ":" + line);
      if (!spec) {
        std::cerr << spec.error().message << "\n";
        continue;
      }
      inputs.push_back(std::move(*spec));
      given = true;
    }
  }
  return true;
}

}  // namespace

int run_describe(const std::vector<std::string>& args) {
  DescribeRequest r;
  bool force = false, print = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--force") {
      force = true;
      continue;
    }
    if (a == "--print") {
      print = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return fail("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail("--" + name + " needs a value");
    }
    if (name == "model") {
      r.model_path = find_model(value);
    } else if (name == "input") {
      auto spec = parse_input_spec(value);
      if (!spec) return fail(spec.error().message);
      r.inputs.push_back(std::move(*spec));
    } else if (name == "max-batch-size") {
      if (Status s = cli::read_number(name, value, 1, 1'000'000, r.max_batch_size); !s)
        return fail(s.message());
    } else if (name == "name") {
      r.name = value;
    } else if (name == "description") {
      r.description = value;
    } else {
      return fail("unknown flag --" + name + " (see batchscope describe --help)");
    }
  }
  if (r.model_path.empty()) return fail("--model PATH is required");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(r.model_path, ec))
    return fail("no model file '" + r.model_path + "'");
  const std::string existing = sidecar_path(r.model_path);
  if (!print && !force && std::filesystem::exists(existing, ec))
    return fail(existing + " exists already; --force replaces it");

  auto forward = forward_arguments(r.model_path);
  if (!forward) return fail(forward.error().message);
  std::vector<std::string> missing;
  for (const ForwardArgument& a : *forward) {
    if (a.has_default) break;
    bool given = false;
    for (const TensorSpec& t : r.inputs) given = given || t.name == a.name;
    if (!given) missing.push_back(a.name);
  }
  if (!missing.empty() && isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
    if (!ask_missing(*forward, r.inputs)) return fail("no shapes given");
  } else if (!missing.empty()) {
    std::string names, flags;
    for (const std::string& n : missing) {
      names += (names.empty() ? "'" : ", '") + n + "'";
      flags += " --input " + n + ":DTYPE:SHAPE";
    }
    return fail("the model's forward takes " + names + " with no shape given; add" + flags +
                " (e.g. --input " + missing[0] + ":FP32:3,224,224, without the batch dimension)");
  }

  auto meta = describe_model(r);
  if (!meta) return fail(meta.error().message);
  if (print) {
    std::cout << metadata_json(*meta);
    return 0;
  }
  auto written = write_sidecar(r.model_path, *meta);
  if (!written) return fail(written.error().message);
  std::cout << "wrote " << *written << "\n";
  for (const TensorSpec& t : meta->inputs) std::cout << "  input  " << t.describe() << "\n";
  for (const TensorSpec& t : meta->outputs) std::cout << "  output " << t.describe() << "\n";
  std::cout << "  max_batch_size " << meta->max_batch_size << "\n"
            << "next: batchscope profile --model " << r.model_path << "\n";
  return 0;
}

}  // namespace batchscope
