// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "app/cli_args.h"
#include "app/run_output.h"
#include "common/metadata_json.h"
#include "model/model_paths.h"
#include "torch/describe.h"

namespace batchscope {

std::string describe_help() {
  return "usage: batchscope describe --model PATH [--input NAME:DTYPE:SHAPE ...]\n"
         "                           [--max-batch-size N] [--name NAME] [--description TEXT]\n"
         "                           [--force] [--print]\n"
         "Writes the JSON sidecar (NAME.json) every command needs beside a TorchScript model\n"
         "NAME.pt: one --input per argument of its forward() (a KServe v2 datatype and the\n"
         "shape without the batch dimension: --input image:FP32:3,32,32; asked for on a\n"
         "terminal), and the outputs one forward pass on zeros returns. --max-batch-size:\n"
         "the largest batch it accepts (default 64). The sidecar goes beside the model, or\n"
         "into $XDG_CONFIG_HOME/batchscope/sidecars/ when that folder cannot be written. An\n"
         "existing sidecar is kept unless --force; --print writes the JSON to stdout.\n";
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
  // --input comes once per argument of forward(); the rest once each.
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string spec;
    if (args[i] == "--input" && i + 1 < args.size()) {
      spec = args[++i];
    } else if (args[i].starts_with("--input=")) {
      spec = args[i].substr(8);
    } else {
      rest.push_back(args[i]);
      continue;
    }
    auto parsed = parse_input_spec(spec);
    if (!parsed) return fail(parsed.error().message);
    r.inputs.push_back(std::move(*parsed));
  }
  auto flags = cli::parse_flags(rest, {"force", "print"});
  if (!flags) return fail(flags.error().message);
  std::string model;
  if (Status s = cli::take_fields(
          *flags, {cli::text("model", model), cli::on("force", force), cli::on("print", print),
                   cli::number("max-batch-size", 1, 1'000'000, r.max_batch_size),
                   cli::text("name", r.name), cli::text("description", r.description)});
      !s || !(s = cli::no_flags_left(*flags, "describe"))) {
    return fail(s.message());
  }
  if (!model.empty()) r.model_path = find_model(model);
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
