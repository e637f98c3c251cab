#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope serve as a process: it prints its address once warm, answers
# /infer and KServe v2 over HTTP, and on SIGTERM finishes and exits 0.
# Usage: serve_smoke.sh BATCHSCOPE MODEL
set -euo pipefail
bin=$1
model=$2
log=$(mktemp)
"$bin" serve --model "$model" --port 0 --max-wait-ms 1 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
url=$(grep -o 'http://[0-9.:]*' "$log")
[ -n "$url" ] || { echo "serve never said where it listens"; cat "$log"; exit 1; }
body=$(python3 -c 'import json; print(json.dumps({"data": [0.25] * 128}))')
out=$(curl -sf -X POST --data "$body" "$url/infer")
[[ "$out" == *'"result":['* ]] || { echo "bad /infer answer: $out"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data '{"data": [1]}' "$url/infer")
[ "$code" = 422 ] || { echo "short input answered $code, not 422"; exit 1; }
# Captured first: `curl | grep -q` under pipefail fails when grep stops reading early.
meta=$(curl -sf "$url/v2/models/linear_128x64")
[[ "$meta" == *'"datatype":"FP32"'* ]] || { echo "bad metadata: $meta"; exit 1; }
metrics=$(curl -sf "$url/metrics")
[[ "$metrics" == *'batchscope_requests_total{outcome="ok"} 1'* ]] ||
  { echo "metrics do not count the one ok request"; echo "$metrics" | head -20; exit 1; }
if command -v promtool >/dev/null; then
  lint=$(echo "$metrics" | promtool check metrics 2>&1) || { echo "promtool refused /metrics: $lint"; exit 1; }
fi
kill -TERM $pid
wait $pid
grep -q "^stopped:" "$log" || { echo "no clean stop"; cat "$log"; exit 1; }
echo "serve answered over HTTP and stopped cleanly"
