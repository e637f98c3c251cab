#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# bench --trace with the public language-model formats: a generative model
# replays each request at its time (scaled by --trace-speed) with its
# lengths, fitted to the model's context with a count printed; a tensor
# model replays the arrivals alone; a bad row is named by line, and length
# flags beside a trace that gives lengths are refused.
# Usage: trace_replay.sh BATCHSCOPE TRACES_DIR WORKDIR
set -euo pipefail
bin=$1
traces=$2
dir=$3
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
"$bin" bench --synthetic-lm 300,5 --trace "$traces/azure.csv" --trace-speed 10000 --duration 5 \
  --csv "$dir/azure" --no-history >"$dir/azure.txt"
grep -q "trace: 2 prompts clipped to the model's context of 1024 tokens, 1 max_tokens cut" "$dir/azure.txt"
grep -q "workload: azure trace of 6 requests" "$dir/azure.txt"
python3 - "$dir/azure_requests.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = [(round(float(r["intended_ms"]), 6), int(r["prompt_tokens"]), int(r["max_tokens"]), r["outcome"])
       for r in rows]
# azure.expected's offsets / 10,000, and its lengths fitted to 1024 tokens.
want = [(0.0, 374, 44), (0.431458, 396, 109), (0.431458, 879, 4), (1.431941, 1023, 1),
        (2065.281941, 91, 17), (2065.356941, 1023, 1)]
assert [g[:3] for g in got] == want, got
assert all(g[3] == "length" for g in got), got
PY
"$bin" bench --synthetic 100,10 --trace "$traces/mooncake.jsonl" --trace-speed 100 --no-history \
  --csv "$dir/tensor" >"$dir/tensor.txt"
grep -q "sent 4   ok 4" "$dir/tensor.txt"
python3 - "$dir/tensor_requests.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted(round(float(r["intended_us"]) / 1000, 3) for r in rows)
assert got == [0.0, 0.0, 105.35, 274.825], got  # mooncake.expected's offsets / 100
PY
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,2\nyesterday,3,4\n' >"$dir/bad.csv"
if "$bin" bench --synthetic-lm 300,5 --trace "$dir/bad.csv" 2>"$dir/err.txt"; then
  echo "a bad trace was accepted"; exit 1
fi
grep -q "bad.csv: trace line 3: TIMESTAMP 'yesterday' is not a date-time" "$dir/err.txt"
if "$bin" bench --synthetic-lm 300,5 --trace "$traces/burstgpt.csv" --prompt-len fixed:3 2>"$dir/err.txt"; then
  echo "--prompt-len beside a trace with lengths was accepted"; exit 1
fi
grep -q -- "--prompt-len fixed:3: the burstgpt trace --trace .* gives each request's lengths" "$dir/err.txt"
echo "ok"
