# Ray Serve deployment (deployment.py), exported from Batchscope.
# Deploy with serve_config.yaml from the directory holding this file. Written for Ray 2.x
# releases that have max_ongoing_requests and max_queued_requests (older ones call the
# first max_concurrent_queries and lack the second).
#
# Batchscope options in force: strategy=fifo max_batch_size=32 max_wait_us=4000
# queue_capacity=1024 request_timeout_ms=30000 num_lanes=1 padding=buckets
# length_buckets=16,64,256.
# Model text_classifier on cpu.
#
# max_ongoing_requests is 2 x max_batch_size: a replica takes at most that many requests
# at once, so below max_batch_size its batches could never fill; at twice that, one full
# batch runs while the next one fills.
# One replica per Batchscope lane, each with its own copy of the model, as Batchscope's
# lanes are.
# Not exact: max_queued_requests = queue_capacity is counted by each caller (each HTTP
# proxy) apart, and leaves out the requests a replica already holds.
# Not exact: Ray Serve starts batch_wait_timeout_s when its batching loop begins
# collecting a batch, not when the oldest request arrived as Batchscope does; under load a
# request can wait longer than this.
# Not expressible: request_timeout_ms = 30000. Ray Serve has no queue timeout; see
# http_options in serve_config.yaml.
# This sketch passes the model's first input and returns its first output; extend infer()
# for the others.
# Inputs of varying length (input_ids INT64 [-1, -1] up to [-1, 256], attention_mask INT64
# [-1, -1] up to [-1, 256]): Batchscope padded each batch to its longest request (padding
# = buckets, length_buckets 16,64,256). @serve.batch hands infer() the requests as they
# came: pad them to the longest before torch.stack (and cut each output back), as
# Batchscope's runner does; it batches first come first served, with no buckets and no
# sorting by length.

import torch
from ray import serve
from starlette.requests import Request


@serve.deployment(
    num_replicas=1,
    max_ongoing_requests=64,
    max_queued_requests=1024,
    ray_actor_options={"num_cpus": 1},
)
class BatchedModel:
    def __init__(self, model_path: str = "text_classifier.pt"):
        self.device = "cpu"
        self.model = torch.jit.load(model_path, map_location=self.device).eval()

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.004)
    async def infer(self, rows: list) -> list:
        with torch.inference_mode():
            out = self.model(torch.stack(rows).to(self.device))
        out = out[0] if isinstance(out, (tuple, list)) else out
        return list(out.cpu())

    async def __call__(self, request: Request) -> dict:
        body = await request.json()
        row = torch.tensor(body["data"], dtype=torch.int64).reshape(-1)
        result = await self.infer(row)
        return {"result": result.flatten().tolist()}


app = BatchedModel.bind()
