// SPDX-License-Identifier: GPL-3.0-or-later
// Ray Serve: a deployment (deployment.py) whose method is batched with
// @serve.batch, and the Serve config file (serve_config.yaml) that deploys it.

#include "export/export_text.h"

namespace batchscope::export_detail {

namespace {

const char* torch_dtype(DType t) {
  switch (t) {
    case DType::kFloat32: return "torch.float32";
    case DType::kFloat16: return "torch.float16";
    case DType::kFloat64: return "torch.float64";
    case DType::kInt64: return "torch.int64";
    case DType::kInt32: return "torch.int32";
    case DType::kUInt8: return "torch.uint8";
    case DType::kBool: return "torch.bool";
    // torch has no string dtype, and a TorchScript model takes no BYTES
    // (loading one refuses it): the bytes, were one written, are uint8.
    case DType::kBytes: return "torch.uint8";
  }
  return "torch.float32";
}

// Python string literal (the names here are plain; quotes and backslashes
// are escaped all the same).
std::string py_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += (static_cast<unsigned char>(ch) < 0x20) ? ' ' : ch;
  }
  return out + "\"";
}

std::string ongoing(const Options& o) { return whole(int64_t{o.max_batch_size} * 2); }

}  // namespace

std::string rayserve_notes(const Checked& c) {
  const Options& o = c.o();
  std::string py;
  py += comment(
      "max_ongoing_requests is 2 x max_batch_size: a replica takes at most that many "
      "requests at once, so below max_batch_size its batches could never fill; at twice "
      "that, one full batch runs while the next one fills.");
  py += comment(
      "One replica per Batchscope lane, each with its own copy of the model, as "
      "Batchscope's lanes are.");
  py += comment(
      "Not exact: max_queued_requests = queue_capacity is counted by each caller (each "
      "HTTP proxy) apart, and leaves out the requests a replica already holds.");
  py += comment(
      "Not exact: Ray Serve starts batch_wait_timeout_s when its batching loop begins "
      "collecting a batch, not when the oldest request arrived as Batchscope does; under "
      "load a request can wait longer than this.");
  if (c.device.gpu) {
    py += comment(
        "Not exact: Ray picks the GPU for each replica (cuda inside the replica); it "
        "cannot be pinned to " +
        c.device.name + ".");
  }
  py += comment("Not expressible: request_timeout_ms = " + whole(o.request_timeout_ms) +
                ". Ray Serve has no queue timeout; see http_options in serve_config.yaml.");
  if (o.strategy == StrategyKind::kAdaptive) {
    py +=
        comment("Not expressible: the adaptive strategy (target p99 " + shortest(o.target_p99_ms) +
                " ms). Ray Serve batches with the fixed maxima, which the adaptive strategy "
                "only ever lowers.");
  }
  return py;
}

std::string rayserve_decorator(const Checked& c) {
  const Options& o = c.o();
  const std::string actor = c.device.gpu ? "{\"num_gpus\": 1}" : "{\"num_cpus\": 1}";
  std::string py;
  py += "@serve.deployment(\n";
  py += "    num_replicas=" + whole(o.num_lanes) + ",\n";
  py += "    max_ongoing_requests=" + ongoing(o) + ",\n";
  py += "    max_queued_requests=" + whole(o.queue_capacity) + ",\n";
  py += "    ray_actor_options=" + actor + ",\n";
  py += ")\n";
  return py;
}

std::vector<ExportFile> rayserve_files(const Checked& c) {
  const Options& o = c.o();
  const std::string name = model_name(c.in, "model");
  const std::string wait_s = exact_decimal(o.max_wait_us, 6);

  std::string py;
  py += "# Ray Serve deployment (deployment.py), exported from Batchscope.\n";
  py += comment(
      "Deploy with serve_config.yaml from the directory holding this file. Written for "
      "Ray 2.x releases that have max_ongoing_requests and max_queued_requests (older "
      "ones call the first max_concurrent_queries and lack the second).");
  py += context_block(c);
  py += rayserve_notes(c);
  const bool several =
      c.in.model && (c.in.model->inputs.size() > 1 || c.in.model->outputs.size() > 1);
  if (several) {
    py += comment(
        "This sketch passes the model's first input and returns its first output; "
        "extend infer() for the others.");
  }
  py += padding_note(c,
                     "@serve.batch hands infer() the requests as they came: pad them to the "
                     "longest before torch.stack (and cut each output back), as Batchscope's "
                     "runner does; it batches first come first served, with no buckets and no "
                     "sorting by length.");
  const TensorSpec* input = c.in.model ? &c.in.model->inputs.front() : nullptr;
  std::string reshape;
  if (input) {
    const Shape item = input->item_shape();
    reshape = ".reshape(";
    for (size_t d = 0; d < item.size(); ++d) reshape += (d ? ", " : "") + whole(item[d]);
    reshape += ")";
    if (item.empty()) reshape = ".reshape(())";
  }
  py += "\n";
  py += "import torch\n";
  py += "from ray import serve\n";
  py += "from starlette.requests import Request\n";
  py += "\n\n";
  py += rayserve_decorator(c);
  py += "class BatchedModel:\n";
  py += "    def __init__(self, model_path: str = " + py_string(name + ".pt") + "):\n";
  py += "        self.device = " + std::string(c.device.gpu ? "\"cuda\"" : "\"cpu\"") + "\n";
  py += "        self.model = torch.jit.load(model_path, map_location=self.device).eval()\n";
  py += "\n";
  py += "    @serve.batch(max_batch_size=" + whole(o.max_batch_size) +
        ", batch_wait_timeout_s=" + wait_s + ")\n";
  py += "    async def infer(self, rows: list) -> list:\n";
  py += "        with torch.inference_mode():\n";
  py += "            out = self.model(torch.stack(rows).to(self.device))\n";
  if (several) py += "        out = out[0] if isinstance(out, (tuple, list)) else out\n";
  py += "        return list(out.cpu())\n";
  py += "\n";
  py += "    async def __call__(self, request: Request) -> dict:\n";
  py += "        body = await request.json()\n";
  py += "        row = torch.tensor(body[\"data\"], dtype=" +
        std::string(torch_dtype(input ? input->dtype : DType::kFloat32)) + ")" + reshape + "\n";
  py += "        result = await self.infer(row)\n";
  py += "        return {\"result\": result.flatten().tolist()}\n";
  py += "\n\n";
  py += "app = BatchedModel.bind()\n";
  return {ExportFile{"deployment.py", std::move(py)},
          ExportFile{"serve_config.yaml", rayserve_config_yaml(c, "deployment.py")}};
}

std::string rayserve_config_yaml(const Checked& c, std::string_view holding) {
  const Options& o = c.o();
  const std::string name = model_name(c.in, "model");
  const std::string wait_s = exact_decimal(o.max_wait_us, 6);
  std::string yaml;
  yaml += "# Ray Serve config file (serve_config.yaml), exported from Batchscope.\n";
  yaml += comment(
      "Deploy with: serve deploy serve_config.yaml (or serve run), from the directory "
      "holding " +
      std::string(holding) + ". @serve.batch's max_batch_size = " + whole(o.max_batch_size) +
      " and batch_wait_timeout_s = " + wait_s + " are set in deployment.py.");
  yaml += context_block(c);
  yaml += comment(
      "max_ongoing_requests is 2 x max_batch_size, so that batches can fill; "
      "deployment.py says why, and what is not exact.");
  yaml +=
      comment("Not expressible: request_timeout_ms = " + whole(o.request_timeout_ms) +
              ". Ray Serve has no queue timeout; the nearest is http_options.request_timeout_s, "
              "which bounds the whole request (queue and model) for every application:");
  yaml += "# http_options:\n";
  yaml += "#   request_timeout_s: " + exact_decimal(o.request_timeout_ms, 3) + "\n";
  yaml += "\n";
  yaml += "applications:\n";
  yaml += "  - name: " + py_string(name) + "\n";
  yaml += "    route_prefix: /\n";
  yaml += "    import_path: deployment:app\n";
  yaml += "    deployments:\n";
  yaml += "      - name: BatchedModel\n";
  yaml += "        num_replicas: " + whole(o.num_lanes) + "\n";
  yaml += "        max_ongoing_requests: " + ongoing(o) + "\n";
  yaml += "        max_queued_requests: " + whole(o.queue_capacity) + "\n";
  yaml += "        ray_actor_options:\n";
  yaml += c.device.gpu ? "          num_gpus: 1\n" : "          num_cpus: 1\n";
  return yaml;
}

}  // namespace batchscope::export_detail
