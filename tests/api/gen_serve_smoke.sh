#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope serve with a generative model as a process: it answers OpenAI
# completions whole and streamed (Server-Sent Events ending in [DONE]) and
# Triton's generate, counts them in /metrics, retunes live, and on SIGTERM
# exits 0 with balanced accounting.
# Usage: gen_serve_smoke.sh BATCHSCOPE
set -euo pipefail
bin=$1
log=$(mktemp)
"$bin" serve --synthetic-lm 200,5 --port 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
url=$(grep -o 'http://[0-9.:]*' "$log")
[ -n "$url" ] || { echo "serve never said where it listens"; cat "$log"; exit 1; }
out=$(curl -sf "$url/v1/completions" -d '{"prompt": "And God said", "max_tokens": 8}')
[[ "$out" == *'"finish_reason":"length"'* && "$out" == *'"completion_tokens":8'* ]] ||
  { echo "bad completion: $out"; exit 1; }
stream=$(curl -sfN "$url/v1/completions" -d '{"prompt": "Let", "max_tokens": 5, "stream": true}')
events=$(grep -c '^data: ' <<<"$stream")
[ "$events" = 7 ] || { echo "expected 7 events (5 tokens, finish, [DONE]), got $events: $stream"; exit 1; }
[[ "$(grep '^data: ' <<<"$stream" | tail -1)" == 'data: [DONE]' ]] || { echo "no [DONE]: $stream"; exit 1; }
gen=$(curl -sf "$url/v2/models/synthetic_lm/generate" -d '{"text_input": "Hi", "max_tokens": 3}')
[[ "$gen" == *'"text_output":'* ]] || { echo "bad generate: $gen"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/completions" -d '{"prompt": "x", "top_p": 0}')
[ "$code" = 422 ] || { echo "top_p 0 answered $code, not 422"; exit 1; }
put=$(curl -sf -X PUT "$url/v1/config" -d '{"scheduling": "static", "max_num_seqs": 8}')
[[ "$put" == *'"scheduling":"static"'* && "$put" == *'"version":2'* ]] || { echo "bad PUT: $put"; exit 1; }
# A second lane, live: a copy of the model that takes requests once warm.
put=$(curl -sf -X PUT "$url/v1/config" -d '{"num_lanes": 2}')
[[ "$put" == *'"num_lanes":2'* && "$put" == *'"version":3'* ]] || { echo "bad lanes PUT: $put"; exit 1; }
for _ in $(seq 50); do
  metrics=$(curl -sf "$url/metrics")
  [[ "$metrics" == *'batchscope_lanes_serving 2'* ]] && break
  sleep 0.1
done
[[ "$metrics" == *'batchscope_lanes_serving 2'* && "$metrics" == *'batchscope_option_lanes 2'* ]] ||
  { echo "no second lane:"; grep lanes <<<"$metrics"; exit 1; }
metrics=$(curl -sf "$url/metrics")
[[ "$metrics" == *'batchscope_generation_requests_total{reason="length"} 3'* ]] ||
  { echo "metrics do not count three completions"; echo "$metrics" | head -30; exit 1; }
[[ "$metrics" == *'batchscope_time_to_first_token_seconds_count 3'* ]] || { echo "no TTFT count"; exit 1; }
if command -v promtool >/dev/null; then
  lint=$(echo "$metrics" | promtool check metrics 2>&1) || { echo "promtool refused /metrics: $lint"; exit 1; }
fi
kill -TERM $pid
wait $pid
grep -q "engine admitted 3 = completed 3" "$log" || { echo "accounting:"; cat "$log"; exit 1; }
echo "ok"
