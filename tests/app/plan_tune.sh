#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# tune on a language model planned for a GPU that is not here: Llama-3.1-8B
# on H100s at TP 1 and 2 for a target rate gives each parallelism's capacity,
# replicas and GPUs, the fewest GPUs chosen; its JSON alone exports vLLM,
# TGI, TensorRT-LLM and KServe files naming the model, TP and replicas, read
# back with a YAML parser; the shell scripts run with stand-in servers that
# print what they were given; chunked prefill off is searched only where a
# prompt fits one step; what a plan cannot do is refused by name.
# Usage: plan_tune.sh BATCHSCOPE WORKDIR SOURCE_DIR
set -euo pipefail
bin=$1
dir=$2
src=$3
rm -rf "$dir"
mkdir -p "$dir"
config="$src/models/llm-configs/llama-3.1-8b"
plan=(tune --no-history --model-config "$config" --gpu h100-sxm --slo-ttft-ms 300 --slo-itl-ms 40
      --prompt-len fixed:512 --max-tokens fixed:64 --rate 4 --duration 4 --seed 3 --budget-s 200)
"$bin" "${plan[@]}" --tp 1,2 --target-rate 30 --model-id meta-llama/Llama-3.1-8B-Instruct \
  --space "max_num_seqs=16|64,max_num_batched_tokens=512|2048" --json "$dir/tune.json" \
  >"$dir/tune.txt"
grep -q "^planned: .* on h100-sxm, tp [12] x [0-9]* replicas\? ([0-9]* GPUs\?)" "$dir/tune.txt"
grep -q "assumed: Prefix caching off" "$dir/tune.txt"
for f in vllm tgi trtllm kserve; do
  mkdir -p "$dir/$f"
  "$bin" export --config "$dir/tune.json" --format "$f" --out "$dir/$f" >/dev/null
done
/usr/bin/python3 - "$dir" <<'PY'
import json, math, sys
import yaml
d = sys.argv[1]
t = json.load(open(f"{d}/tune.json"))
p, lm, best = t["plan"], t["lm"], t["best"]["options"]
per = {x["tp"]: x for x in t["per_tp"]}
assert sorted(per) == [1, 2], per
for tp, x in per.items():
    # Replicas for 30 req/s with 15% held back, on each one's capacity.
    assert x["capacity_rps"] > 0, x
    assert x["replicas"] == math.ceil(30 * 1.15 / x["capacity_rps"]), x
    assert x["gpus"] == tp * x["replicas"], x
# The fewest GPUs in all, the smaller TP on a tie.
want = min(per.values(), key=lambda x: (x["gpus"], x["tp"]))
assert p["tp"] == want["tp"] and p["gpus"] == want["gpus"], (p, want)
assert p["min_replicas"] == math.ceil(30 / p["capacity_rps"]) <= p["replicas"], p
assert p["model_id"] == "meta-llama/Llama-3.1-8B-Instruct" and p["gpu"] == "h100-sxm", p
assert p["caveats"] and lm["context_length"] == 131072, (p, lm)
assert t["model_file"] == "" and t["best"].get("measured") is None, t["best"]

v = yaml.safe_load(open(f"{d}/vllm/vllm-config.yaml"))
assert v["model"] == p["model_id"], v
assert v["tensor-parallel-size"] == p["tp"] and v["gpu-memory-utilization"] == 0.9, v
assert v["max-model-len"] == lm["context_length"], v
assert v["max-num-seqs"] == best["max_num_seqs"], v
assert v["max-num-batched-tokens"] == best["max_num_batched_tokens"], v
assert v["enable-chunked-prefill"] is True and v["dtype"] == "bfloat16", v
assert "num-gpu-blocks-override" not in v, v

k = yaml.safe_load(open(f"{d}/kserve/inferenceservice.yaml"))
assert k["apiVersion"] == "serving.kserve.io/v1beta1" and k["kind"] == "InferenceService", k
pred = k["spec"]["predictor"]
assert pred["minReplicas"] == p["min_replicas"] and pred["maxReplicas"] == p["replicas"], pred
assert pred["scaleMetric"] == "concurrency" and pred["scaleTarget"] >= 1, pred
# Little's law at one replica's planned rate.
rate = p["capacity_rps"] / (1 + p["headroom"])
assert pred["scaleTarget"] == max(1, math.ceil(rate * p["e2e_p50_ms"] / 1000)), pred
m = pred["model"]
assert m["modelFormat"]["name"] == "huggingface", m
assert m["resources"]["limits"]["nvidia.com/gpu"] == str(p["tp"]), m
args = m["args"]
for a in (f"--model_id={p['model_id']}", f"--tensor-parallel-size={p['tp']}",
          f"--max-num-seqs={best['max_num_seqs']}", "--enable-chunked-prefill"):
    assert a in args, (a, args)

tr = yaml.safe_load(open(f"{d}/trtllm/trtllm-options.yaml"))
assert tr["tensor_parallel_size"] == p["tp"] and tr["max_batch_size"] == best["max_num_seqs"], tr
assert tr["kv_cache_config"]["free_gpu_memory_fraction"] == 0.9, tr
env = dict(l.split("=", 1) for l in open(f"{d}/tgi/tgi.env").read().splitlines()
           if l and not l.startswith("#"))
assert env["MODEL_ID"] == p["model_id"] and env["NUM_SHARD"] == str(p["tp"]), env
PY
# The launch scripts run, with stand-ins for the servers that print their arguments.
mkdir -p "$dir/fake"
printf '#!/bin/sh\nprintf "%%s\\n" "$@"\n' >"$dir/fake/vllm"
cp "$dir/fake/vllm" "$dir/fake/text-generation-launcher"
chmod +x "$dir/fake/vllm" "$dir/fake/text-generation-launcher"
PATH="$dir/fake:$PATH" sh "$dir/vllm/vllm-serve.sh" --port 9000 >"$dir/vllm-args.txt"
grep -qx "meta-llama/Llama-3.1-8B-Instruct" "$dir/vllm-args.txt"
grep -qx -- "--tensor-parallel-size" "$dir/vllm-args.txt"
grep -qx -- "9000" "$dir/vllm-args.txt"
PATH="$dir/fake:$PATH" MODEL=other/model sh "$dir/vllm/vllm-serve.sh" | grep -qx "other/model"
PATH="$dir/fake:$PATH" sh "$dir/tgi/tgi-launch.sh" >"$dir/tgi-args.txt"
grep -qx "meta-llama/Llama-3.1-8B-Instruct" "$dir/tgi-args.txt"
grep -qx -- "--num-shard" "$dir/tgi-args.txt"

# Chunked prefill off: only where a prompt fits one step (--max-model-len
# 2048: the 2048-token budget; the 512 one is invalid and counted).
"$bin" "${plan[@]}" --max-model-len 2048 --max-rate \
  --space "max_num_seqs=16,max_num_batched_tokens=512|2048,chunked_prefill=0|1" \
  --json "$dir/chunked.json" >"$dir/chunked.txt"
/usr/bin/python3 - "$dir" <<'PY'
import json, sys
t = json.load(open(f"{sys.argv[1]}/chunked.json"))
assert t["invalid"] == 1 and t["evaluated"] == 3, (t["invalid"], t["evaluated"])
offs = [p for p in t["pareto"] if not p["options"]["chunked_prefill"]]
assert all(p["options"]["max_num_batched_tokens"] == 2048 for p in offs), offs
assert t["max_rate"]["rate_rps"] > 0, t["max_rate"]
PY

refuse() {
  local want=$1
  shift
  if "$bin" "$@" >"$dir/out.txt" 2>&1; then
    echo "expected a refusal: $*"
    exit 1
  fi
  grep -qF -- "$want" "$dir/out.txt" || { echo "want: $want"; cat "$dir/out.txt"; exit 1; }
}
refuse "cannot run live" "${plan[@]}" --confirm 2
refuse "priced by the roofline" "${plan[@]}" --cost "$dir/tune.json"
refuse "a closed loop has none" "${plan[@]}" --pattern closed --concurrency 4 --target-rate 10
refuse "is a model run here" "${plan[@]}" --synthetic-lm 100,1
refuse "the kserve export is for a language model planned for a GPU" export --format kserve \
  --synthetic-lm 100,1
echo ok
