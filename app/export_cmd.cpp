// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/commands.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/cli_args.h"
#include "app/model_flags.h"
#include "common/file_text.h"
#include "export/export_config.h"

namespace batchscope {

std::string export_help() {
  return "usage: batchscope export --format FORMAT [--config FILE]\n"
         "                         [--model PATH | --synthetic A_US,C_US] [--device cpu|cuda:N]\n"
         "                         [--out PATH] [serving options] [--batch-sizes N,N,...]\n"
         "                         [--traffic TEXT] [--p50-ms X --p99-ms X --throughput RPS]\n"
         "Writes the options as a production server's configuration (docs/export.md).\n"
         "  triton      config.pbtxt (its input and output from --model)\n"
         "  tfserving   batching_parameters.txt\n"
         "  torchserve  config.properties and model-config.yaml\n"
         "  rayserve    deployment.py and serve_config.yaml\n"
         "  (a Python model, --model FILE.py [--class NAME] [--model-option K=V]: triton,\n"
         "  torchserve and rayserve add a wrapper that runs the class, and the file)\n"
         "  dbie        dbie.env, the Python engine's environment file\n"
         "  json        batchscope.json, what serve --config and the window load\n"
         "A generative model (--synthetic-lm S,T or its --model; --cache-tokens N) exports its\n"
         "scheduling, max_num_seqs, max_num_batched_tokens, context and cache:\n"
         "  vllm        vllm-config.yaml (vllm serve --config) and vllm-serve.sh\n"
         "  tgi         tgi.env and tgi-launch.sh (text-generation-launcher)\n"
         "  trtllm      trtllm-options.yaml (trtllm-serve --extra_llm_api_options) and the\n"
         "              Triton tensorrtllm backend's config.pbtxt\n"
         "  kserve      inferenceservice.yaml, a KServe InferenceService (Hugging Face runtime,\n"
         "              vLLM's arguments, a GPU request, replicas and autoscaling): a plan's\n"
         "--config reads Batchscope JSON, a Triton config.pbtxt or a tune's result (tune\n"
         "--json: its best's options, traffic and figures; a generative tune's model, and a\n"
         "plan's GPU, tensor parallelism and replicas, so --model is not needed); flags\n"
         "override it. Without --out\n"
         "the files go to stdout, each under a '==> NAME <==' line when several; with it, to\n"
         "the file PATH, or into the directory PATH. --batch-sizes: the sizes the model runs\n"
         "best at (Triton preferred_batch_size, TF Serving allowed_batch_sizes); --traffic and\n"
         "the measured figures become comments, as does what a format cannot express.\n"
         "Serving options:\n" +
         cli::options_help();
}

std::string import_help() {
  return "usage: batchscope import --from FILE [--out FILE.json] [--config BASE.json]\n"
         "Reads a Triton config.pbtxt (max_batch_size, dynamic_batching, instance_group), a\n"
         "vLLM config YAML (max-num-seqs, max-num-batched-tokens) or Batchscope JSON and\n"
         "writes Batchscope JSON (to stdout without --out), which\n"
         "serve --config and the window load. What the file does not say comes from\n"
         "--config, or the defaults; what does not carry over exactly is listed on stderr.\n";
}

namespace {

int fail(const char* command, const std::string& message, int code = 2) {
  std::cerr << "batchscope " << command << ": " << message << "\n";
  return code;
}

Expected<std::string> read_text(const std::string& flag, const std::string& path) {
  auto text = read_file_text(path);
  if (!text) return invalid_argument("--" + flag + ": " + text.error().message);
  return text;
}

bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

void print_notes(const char* command, const ImportResult& r) {
  for (const std::string& n : r.notes) {
    std::cerr << "batchscope " << command << ": note: " << n << "\n";
  }
}

}  // namespace

int write_export_files(const char* command, const std::vector<ExportFile>& files,
                       const std::string& out) {
  namespace fs = std::filesystem;
  if (out.empty()) {
    for (const ExportFile& f : files) {
      if (files.size() > 1) std::cout << "==> " << f.name << " <==\n";
      std::cout << f.text;
      if (files.size() > 1 && &f != &files.back()) std::cout << "\n";
    }
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  std::error_code ec;
  if (files.size() > 1 || fs::is_directory(out, ec)) {
    if (Status s = write_export(files, out); !s) return fail(command, "--out: " + s.message(), 1);
    for (const ExportFile& f : files)
      std::cout << "wrote " << (fs::path(out) / f.name).string() << "\n";
    return 0;
  }
  if (!write_text(out, files[0].text)) return fail(command, "cannot write " + out, 1);
  std::cout << "wrote " << out << "\n";
  return 0;
}

int run_export(const std::vector<std::string>& args) {
  const char* cmd = "export";
  auto flags = cli::parse_flags(args);
  if (!flags) return fail(cmd, flags.error().message);
  std::string format_name, config, sizes, traffic, out;
  double p50 = -1, p99 = -1, rps = -1;
  if (Status s = cli::take_fields(
          *flags, {cli::text("format", format_name), cli::text("config", config),
                   cli::text("batch-sizes", sizes), cli::text("traffic", traffic),
                   cli::number("p50-ms", 0, 1e9, p50), cli::number("p99-ms", 0, 1e9, p99),
                   cli::number("throughput", 0, 1e12, rps), cli::text("out", out)});
      !s) {
    return fail(cmd, s.message());
  }
  if (format_name.empty()) {
    return fail(cmd,
                "--format is required: triton, tfserving, torchserve, rayserve, dbie, json, "
                "or for a generative model vllm, tgi or trtllm");
  }
  auto format = parse_export_format(format_name);
  if (!format) return fail(cmd, "--format: " + format.error().message);

  ExportInput in;
  std::optional<std::string> config_device;
  if (!config.empty()) {
    auto text = read_text("config", config);
    if (!text) return fail(cmd, text.error().message);
    auto imported = import_config(*text, Options{});
    if (!imported) return fail(cmd, "--config " + config + ": " + imported.error().message);
    print_notes(cmd, *imported);
    in.options = imported->options;
    config_device = imported->device;
    in.batch_sizes = imported->batch_sizes;
    in.tuning = imported->tuning;  // a tune's traffic and figures, for the comments
    // A generative tune names its model: its context and cache, and a
    // planned one's GPU, parallelism and replicas.
    in.lm = imported->lm;
    in.plan = imported->plan;
  }
  auto options = cli::take_options(*flags, in.options);
  if (!options) return fail(cmd, options.error().message);
  in.options = *options;

  const bool device_given = flags->count("device") > 0;
  if (wants_lm(*flags, "")) {
    // A generative model: its context and cache, read on the CPU.
    auto lm_choice = take_lm_flags(*flags, "");
    if (!lm_choice) return fail(cmd, lm_choice.error().message);
    in.device = device_given ? lm_choice->device : config_device.value_or("cpu");
    auto model = LocalModel::open(*lm_choice);
    if (!model) return fail(cmd, model.error().message);
    const LmInfo& m = model->lm_info();
    in.lm = GenModelInfo{m.name, m.context_length, m.block_size, m.num_blocks};
    in.plan.reset();  // the model given here, not the one planned
    if (!is_generative(*format) && *format != ExportFormat::kJson) {
      return fail(cmd, std::string("--format ") + export_format_name(*format) +
                           " is for a tensor model; a generative model exports as vllm, tgi, "
                           "trtllm or json");
    }
  }
  auto choice = take_model_flags(*flags, "");
  if (!choice) return fail(cmd, choice.error().message);
  if (Status s = cli::no_flags_left(*flags, cmd); !s) return fail(cmd, s.message());
  if (!in.lm || device_given) {
    in.device = device_given ? choice->device : config_device.value_or("cpu");
  }
  if (in.lm && !is_generative(*format) && *format != ExportFormat::kJson) {
    return fail(cmd, std::string("--format ") + export_format_name(*format) + ": --config " +
                         config +
                         " is a generative model's tune; it exports as vllm, tgi, "
                         "trtllm, kserve (a plan for a GPU) or json");
  }
  if (!in.lm && (!choice->path.empty() || choice->synthetic)) {
    choice->device = in.device;
    auto model = LocalModel::open(*choice);
    if (!model) return fail(cmd, model.error().message);
    in.model = model->metadata();
    // A Python model's wrappers copy its handler and construct its class.
    if (Status s = add_python_handler(in, choice->path, model->lane_metadata(),
                                      choice->python.class_name, choice->python.options);
        !s) {
      return fail(cmd, s.message());
    }
  }
  if (!sizes.empty()) {
    auto parsed = cli::parse_counts("batch-sizes", sizes, 1, kMaxBatchSize);
    if (!parsed) return fail(cmd, parsed.error().message);
    in.batch_sizes = *parsed;
  }
  if (!traffic.empty()) in.tuning.traffic = traffic;
  const int given = (p50 >= 0) + (p99 >= 0) + (rps >= 0);
  if (given > 0 && given < 3) {
    return fail(cmd, "--p50-ms, --p99-ms and --throughput go together");
  }
  if (given == 3) {  // measured figures given by hand replace a config's
    TuningContext by_hand;
    by_hand.traffic = in.tuning.traffic;
    by_hand.measured = true;
    by_hand.p50_ms = p50;
    by_hand.p99_ms = p99;
    by_hand.throughput_rps = rps;
    in.tuning = by_hand;
  }
  auto files = export_config(*format, in);
  if (!files) return fail(cmd, files.error().message);
  if (*format == ExportFormat::kTriton && !in.model) {
    std::cerr << "batchscope export: note: no --model, so config.pbtxt has no input and output; "
                 "add them before Triton loads it\n";
  }
  return write_export_files(cmd, *files, out);
}

int run_import(const std::vector<std::string>& args) {
  const char* cmd = "import";
  auto flags = cli::parse_flags(args);
  if (!flags) return fail(cmd, flags.error().message);
  std::string from, out, config;
  if (Status s = cli::take_fields(
          *flags, {cli::text("from", from), cli::text("out", out), cli::text("config", config)});
      !s || !(s = cli::no_flags_left(*flags, cmd))) {
    return fail(cmd, s.message());
  }
  if (from.empty()) return fail(cmd, "--from FILE is required (a Triton config.pbtxt or JSON)");
  Options base;
  if (!config.empty()) {
    auto text = read_text("config", config);
    if (!text) return fail(cmd, text.error().message);
    auto imported = import_config(*text, base);
    if (!imported) return fail(cmd, "--config " + config + ": " + imported.error().message);
    base = imported->options;
  }
  auto text = read_text("from", from);
  if (!text) return fail(cmd, text.error().message);
  auto imported = import_config(*text, base);
  if (!imported) return fail(cmd, from + ": " + imported.error().message);
  print_notes(cmd, *imported);
  if (imported->device) {
    std::cerr << "batchscope import: note: the instances run on " << *imported->device
              << "; Batchscope JSON has no device: give serve --device " << *imported->device
              << "\n";
  }
  ExportInput in;
  in.options = imported->options;
  auto files = export_config(ExportFormat::kJson, in);
  if (!files) return fail(cmd, files.error().message);
  return write_export_files(cmd, *files, out);
}

}  // namespace batchscope
