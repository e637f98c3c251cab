#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A language model planned for a GPU that is not here: bench --target predict
# with --model-config and --gpu (the shipped Llama-3.1-8B config on an H100)
# gives the means published figures use and the KV cache the memory leaves;
# the GPU table lists and round-trips through --gpu-spec; what cannot run is
# refused by name.
# Usage: plan_predict.sh BATCHSCOPE WORKDIR SOURCE_DIR
set -euo pipefail
bin=$1
dir=$2
src=$3
mkdir -p "$dir"
config="$src/models/llm-configs/llama-3.1-8b"
run=(bench --no-history --target predict --model-config "$config" --prompt-len fixed:467
     --max-tokens fixed:256 --pattern poisson --rate 2 --duration 30 --seed 1)
"$bin" "${run[@]}" --gpu h100-sxm --json "$dir/h100.json" >"$dir/h100.txt"
grep -q "planned: llama-3.1-8b on h100-sxm x1, bf16 (kv bf16): 14.96 GiB of weights a GPU, 128 KiB of KV a token" "$dir/h100.txt"
"$bin" "${run[@]}" --gpu h200 --json "$dir/h200.json" >"$dir/h200.txt"
# The same through a --gpu-spec file written from the table.
"$bin" gpus --json >"$dir/gpus.json"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
gpus = json.load(open(f"{d}/gpus.json"))
assert len(gpus) >= 11 and all(g["source"] for g in gpus), len(gpus)
h100 = next(g for g in gpus if g["name"] == "h100-sxm")
json.dump(h100, open(f"{d}/h100-spec.json", "w"))
s = json.load(open(f"{d}/h100.json"))["summary"]
for key in ("ttft_mean_ms", "itl_mean_ms", "tpot_mean_ms", "output_tokens_per_s", "kv_cache_tokens"):
    assert key in s, key
assert s["ok"] == s["sent"] > 40, s
# About 2 requests/s of 256 tokens each.
assert 400 < s["output_tokens_per_s"] < 600, s["output_tokens_per_s"]
# A decode reads the 15 GB of weights: milliseconds a token, not microseconds.
assert 3 < s["itl_mean_ms"] < 20 and s["ttft_mean_ms"] > s["itl_mean_ms"], s
# The H200 has 141 GB at 4.8 TB/s: a larger cache and faster decodes.
t = json.load(open(f"{d}/h200.json"))["summary"]
assert t["kv_cache_tokens"] > 1.9 * s["kv_cache_tokens"], (t["kv_cache_tokens"], s["kv_cache_tokens"])
assert t["itl_mean_ms"] < s["itl_mean_ms"], (t["itl_mean_ms"], s["itl_mean_ms"])
# The band: the roofline's step at 0.85 and 1.15 holds the nominal prediction.
b = json.load(open(f"{d}/h100.json"))["band"]
assert (b["fast"], b["slow"]) == (0.85, 1.15), b
for key in ("ttft_mean_ms", "itl_mean_ms", "output_tokens_per_s"):
    lo, hi = b[key]
    assert lo < s[key] < hi or (key == "output_tokens_per_s" and lo <= s[key] <= hi), (key, b, s)
assert "keeps no drift" in b["source"], b
PY
"$bin" "${run[@]}" --gpu-spec "$dir/h100-spec.json" --json "$dir/spec.json" >/dev/null
cmp <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary'])" "$dir/h100.json") \
    <(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary'])" "$dir/spec.json")
"$bin" gpus >"$dir/gpus.txt"
grep -Eq "^h100-sxm +NVIDIA H100 SXM5 80GB +80 +3350 +989.5" "$dir/gpus.txt"

# Refusals: each names what is wrong, and exits 2.
refuse() {  # EXPECTED ARGS...: bench refuses with EXPECTED in its message
  local expected=$1 rc=0
  shift
  "$bin" "$@" >"$dir/out.txt" 2>"$dir/err.txt" || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc for $*"; cat "$dir/err.txt"; exit 1; }
  grep -qF -- "$expected" "$dir/err.txt" || { echo "want: $expected"; cat "$dir/err.txt"; exit 1; }
}
refuse "--gpu \"tpu-v5\" is not in the table" "${run[@]}" --gpu tpu-v5
refuse "MixtralForCausalLM is a mixture of experts" "${run[@]}" --gpu h100-sxm \
  --model-config "$src/models/llm-configs/mixtral-8x7b"
refuse "leave no KV cache" "${run[@]}" --gpu h100-sxm --model-config "$src/models/llm-configs/llama-3.1-70b"
refuse "has no fp8 tensor cores" "${run[@]}" --gpu a100-sxm-80gb --dtype fp8
refuse "the cache holds less than one context of 131072 tokens; give --max-model-len at most" \
  "${run[@]}" --gpu l4
refuse "--tp is for a language model planned for a GPU" tune --no-history --synthetic-lm 100,1 \
  --slo-ttft-ms 100 --tp 1,2
refuse "add --target predict" bench --no-history --model-config "$config" --gpu h100-sxm
refuse "give its --model-config" bench --no-history --target predict --gpu h100-sxm --synthetic-lm 100,1
echo '{"name": "x"}' >"$dir/bad-spec.json"
refuse "\"family\" must be a text" "${run[@]}" --gpu-spec "$dir/bad-spec.json"
# The L4 runs Llama-3.1-8B with a shorter context.
"$bin" "${run[@]}" --gpu l4 --max-model-len 8192 >"$dir/l4.txt"
grep -q "context 8192" "$dir/l4.txt"
echo ok
