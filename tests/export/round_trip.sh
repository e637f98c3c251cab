#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope export and import through files: options exported to Triton and
# to Batchscope JSON import back to the same JSON; every format writes its
# files (several into a directory); malformed input is refused with a message
# naming the field and line, and a non-zero exit.
# Usage: round_trip.sh BATCHSCOPE WORKDIR [MODEL.pt]   (without a model, the
# synthetic stand-in's metadata is used)
set -euo pipefail
bin=$1
dir=$2
model=(--synthetic 1,1)
if [ $# -ge 3 ] && [ -n "$3" ]; then model=(--model "$3"); fi
rm -rf "$dir"
mkdir -p "$dir"
here=$(cd "$(dirname "$0")" && pwd)

opts=(--strategy adaptive --target-p99-ms 7.5 --max-batch-size 64 --max-wait-ms 0.25
      --queue-capacity 500 --timeout-ms 1500 --lanes 2)
"$bin" export --format json "${opts[@]}" --out "$dir/expected.json" >/dev/null

# Triton and back.
"$bin" export --format triton "${model[@]}" --device cuda:1 "${opts[@]}" \
  --out "$dir/config.pbtxt" >/dev/null
grep -q 'max_queue_delay_microseconds: 250' "$dir/config.pbtxt"
grep -q 'gpus: \[ 1 \]' "$dir/config.pbtxt"
"$bin" import --from "$dir/config.pbtxt" --out "$dir/back.json" >/dev/null 2>"$dir/notes.txt"
cmp "$dir/expected.json" "$dir/back.json"
grep -q 'cuda:1' "$dir/notes.txt"

# Batchscope JSON and back; export from a Triton file as --config.
"$bin" import --from "$dir/expected.json" --out "$dir/again.json" >/dev/null
cmp "$dir/expected.json" "$dir/again.json"
"$bin" export --config "$dir/config.pbtxt" --format json >"$dir/from_triton.json" 2>/dev/null
cmp "$dir/expected.json" "$dir/from_triton.json"

# Every format writes its files; several go into a directory.
for f in triton tfserving torchserve rayserve dbie json; do
  "$bin" export --format "$f" "${model[@]}" "${opts[@]}" --out "$dir/$f" >"$dir/$f.out" 2>&1
done
test -s "$dir/triton" && test -s "$dir/json"
test -s "$dir/torchserve/config.properties" && test -s "$dir/torchserve/model-config.yaml"
test -s "$dir/rayserve/deployment.py" && test -s "$dir/rayserve/serve_config.yaml"
grep -q 'batchSize' "$dir/torchserve/model-config.yaml"
grep -q 'batch_timeout_micros { value: 250 }' "$dir/tfserving"
grep -q '^MAX_WAIT_MS=0.25$' "$dir/dbie"
"$bin" export --format rayserve "${opts[@]}" | grep -q '==> serve_config.yaml <=='
if command -v python3 >/dev/null; then
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$dir/rayserve/deployment.py"
fi

# Refusals: a non-zero exit and a message naming the field and line.
refused() {  # PATTERN ARGS...: the command must fail and say PATTERN
  local pattern=$1
  shift
  if "$bin" "$@" >"$dir/refused.txt" 2>&1; then
    echo "not refused: $*" >&2
    exit 1
  fi
  grep -q -- "$pattern" "$dir/refused.txt" || { cat "$dir/refused.txt" >&2; exit 1; }
}
# A generative model's formats: YAML that reads back, shell scripts that
# parse, the Triton tensorrtllm configuration; a tensor model is refused.
gen=(--synthetic-lm 1000,10 --cache-tokens 4096 --max-num-seqs 24 --max-num-batched-tokens 256)
for f in vllm tgi trtllm; do
  "$bin" export --format "$f" "${gen[@]}" --device cuda:0 --out "$dir/$f" >/dev/null
done
grep -q '^max-num-seqs: 24$' "$dir/vllm/vllm-config.yaml"
grep -q '^MAX_BATCH_TOTAL_TOKENS=4096$' "$dir/tgi/tgi.env"
grep -q '^  max_tokens: 4096$' "$dir/trtllm/trtllm-options.yaml"
grep -q '^backend: "tensorrtllm"$' "$dir/trtllm/config.pbtxt"
sh -n "$dir/vllm/vllm-serve.sh" && sh -n "$dir/tgi/tgi-launch.sh"
python3 - "$dir" <<'PY'
import sys, yaml
d = sys.argv[1]
v = yaml.safe_load(open(d + "/vllm/vllm-config.yaml"))
assert v == {"max-num-seqs": 24, "max-num-batched-tokens": 256, "enable-chunked-prefill": True,
             "scheduling-policy": "fcfs", "max-model-len": 1024, "block-size": 16}, v
t = yaml.safe_load(open(d + "/trtllm/trtllm-options.yaml"))
assert t["max_batch_size"] == 24 and t["max_num_tokens"] == 256, t
assert t["scheduler_config"]["capacity_scheduler_policy"] == "MAX_UTILIZATION", t
assert t["kv_cache_config"]["max_tokens"] == 4096, t
PY
# The vLLM config reads back: its two options, and notes for the rest.
"$bin" import --from "$dir/vllm/vllm-config.yaml" --out "$dir/from_vllm.json" 2>"$dir/from_vllm.txt"
grep -q '"max_num_seqs": 24' "$dir/from_vllm.json"
grep -q '"max_num_batched_tokens": 256' "$dir/from_vllm.json"
grep -q "note: max-model-len: 1024 is the model's or the cache's" "$dir/from_vllm.txt"
printf 'max-num-seqs: 8\nmax-num-seqs: 9\n' >"$dir/twice.yaml"
refused 'vLLM config line 2: max-num-seqs is given twice (lines 1 and 2)' import --from "$dir/twice.yaml"
refused 'is for a generative model' export --format vllm --synthetic 100,10
refused '--format triton is for a tensor model' export --format triton --synthetic-lm 100,1
refused 'line 7: the block opened on line 5 is not closed' import --from "$here/data/malformed.pbtxt"
refused 'line 3: max_batch_size = -8 is out of range' import --from "$here/data/negative_batch.pbtxt"
refused 'max_batch_size must be a whole number' export --format json --config "$here/data/bad_field.json"
refused "format 'yaml' is unknown" export --format yaml
refused 'cannot read' export --format triton --config "$dir/nonexistent.json"
refused "device 'tpu:0'" export --format triton --device tpu:0
echo "export and import agree; every format written; refusals name the field"
