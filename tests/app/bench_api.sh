#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# bench drives OpenAI's chat and completions routes of a real serve, in one
# run each against the same server and the same seeded load: every request
# succeeds on both, each runs to its max_tokens (ignore_eos), the usage
# chunk's count and the events agree, and the run says which route and
# which model (asked of GET /v1/models) it measured, and each prompt's
# length as the server's usage counted it. A bare URL takes the
# route of --api; --api on an in-process target is refused.
# Usage: bench_api.sh BATCHSCOPE
set -euo pipefail
bin=$1
dir=$(mktemp -d)
export XDG_CACHE_HOME="$dir/cache"  # kept costs: this run's own
"$bin" serve --synthetic-lm 300,5 --port 0 >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do
  grep -q "listening on" "$dir/log" && break
  sleep 0.1
done
url=$(grep -o 'http://[0-9.:]*' "$dir/log")
[ -n "$url" ] || { echo "serve never said where it listens"; cat "$dir/log"; exit 1; }
for api in completions chat; do
  "$bin" bench --target "$url" --api "$api" --pattern constant --rate 20 \
    --duration 1 --prompt-len fixed:24 --max-tokens fixed:12 --no-history \
    --json "$dir/$api.json" --csv "$dir/$api" >"$dir/$api.out" 2>&1 || { cat "$dir/$api.out"; exit 1; }
done
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
runs = {api: json.load(open(f"{d}/{api}.json")) for api in ("completions", "chat")}
for api, r in runs.items():
    s, c = r["summary"], r["config"]
    assert s["sent"] == 20 and s["ok"] == 20 and s["failed"] == 0, (api, s)
    assert s["output_tokens"] == 20 * 12, (api, s["output_tokens"])
    assert c["model"] == "synthetic_lm", (api, c["model"])
assert runs["chat"]["config"]["target"].endswith("(chat)"), runs["chat"]["config"]
# Prompt lengths as the server counted them: chat's template adds
# "User: " and "\nAssistant: " (18 bytes) to the 24-byte message.
import csv
for api, want in (("completions", 24), ("chat", 24 + 18)):
    rows = list(csv.DictReader(open(f"{d}/{api}_requests.csv")))
    assert len(rows) == 20 and all(int(r["prompt_tokens"]) == want for r in rows), \
        (api, [r["prompt_tokens"] for r in rows])
assert not runs["completions"]["config"]["target"].endswith("(chat)")
print("both routes: 20 of 20 requests, 240 tokens each; model synthetic_lm")
PY
grep -q "POST /v1/chat/completions (chat), model synthetic_lm" "$dir/chat.out" ||
  { echo "chat run did not say its route:"; cat "$dir/chat.out"; exit 1; }
grep -q "POST /v1/completions (completions)" "$dir/completions.out" ||
  { echo "completions run did not say its route:"; cat "$dir/completions.out"; exit 1; }
# --api decides the route of a URL that names the other one.
"$bin" bench --target "$url/v1/completions" --api chat --pattern constant --rate 5 --duration 1 \
  --prompt-len fixed:8 --max-tokens fixed:4 --no-history >"$dir/turned.out" 2>&1 ||
  { cat "$dir/turned.out"; exit 1; }
grep -q "POST /v1/chat/completions (chat)" "$dir/turned.out" && grep -q "ok 5 " "$dir/turned.out" ||
  { echo "--api chat did not turn /v1/completions to chat:"; cat "$dir/turned.out"; exit 1; }
if "$bin" bench --synthetic-lm 300,5 --api chat --duration 1 --no-history >"$dir/inproc.out" 2>&1; then
  echo "--api with --target inproc was accepted"; exit 1
fi
grep -q -- "--api chat picks the HTTP route" "$dir/inproc.out" || { cat "$dir/inproc.out"; exit 1; }
kill -TERM $pid
wait $pid
grep -q "engine admitted 45 = completed 45" "$dir/log" || { echo "accounting:"; cat "$dir/log"; exit 1; }
echo ok
