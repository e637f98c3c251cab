#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope bench on a generative model, in process and through its own
# listener with streamed answers: every request answered, the JSON summary
# has its figures, the CSV a row per request, the Chrome trace one event
# per model step, and the plot is a PNG of some size.
# Usage: gen_bench_exports.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
mkdir -p "$dir"
# Kept costs go to a cache of this run's own, not the user's.
export XDG_CACHE_HOME="$dir/cache"
for target in inproc self-http; do
  "$bin" bench --synthetic-lm 300,5 --rate 60 --duration 1 --seed 3 --max-tokens lognormal:16,1,64 \
    --prompt-len uniform:4,32 --slo-ttft-ms 500 --slo-itl-ms 100 --target "$target" \
    --json "$dir/$target.json" --csv "$dir/$target" --trace-out "$dir/$target.trace.json" \
    --plot "$dir/$target.png" >"$dir/$target.txt"
  grep -q "TTFT" "$dir/$target.txt"
  python3 - "$dir" "$target" <<'PY'
import csv, json, sys
d, target = sys.argv[1], sys.argv[2]
s = json.load(open(f"{d}/{target}.json"))
m = s["summary"]
for k in ["ttft_ms", "itl_ms", "e2e_ms", "e2e_short_half_ms", "tokens_per_s", "goodput_rps"]:
    assert k in m, "summary lacks " + k
assert m["sent"] > 20 and m["ok"] == m["sent"], (m["sent"], m["ok"])
assert m["tokens_per_s"] > 0 and m["ttft_ms"]["p50"] > 0
rows = list(csv.DictReader(open(f"{d}/{target}_requests.csv")))
assert len(rows) == m["sent"]
assert all(r["outcome"] == "length" and int(r["output_tokens"]) == int(r["max_tokens"]) for r in rows)
t = json.load(open(f"{d}/{target}.trace.json"))
steps = [e for e in t["traceEvents"] if e["name"] == "step"]
assert steps and all("decodes" in e["args"] and e["ph"] == "X" for e in steps)
assert m["steps"] == len(steps), (m["steps"], len(steps))
png = open(f"{d}/{target}.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "plot is not a PNG"
assert len(png) > 8000, len(png)
PY
done
# The step cost the run measured: a line through the decode steps that the
# synthetic model's 300 us + 5 us per token lies under, and nothing else.
"$bin" bench --synthetic-lm 300,5 --pattern closed --concurrency 8 --duration 1 --seed 3 \
  --max-tokens fixed:16 --prompt-len fixed:8 --cost-out "$dir/steps.json" >"$dir/steps.txt"
grep -q "step cost:" "$dir/steps.txt"
python3 - "$dir/steps.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["model"] and c["steps"] >= c["decode_steps"] > 10, c
assert c["step_us"] >= 250 and c["token_us"] >= 0, c
assert c["by_decodes"] and all(r["steps"] > 0 and r["median_us"] > 0 for r in c["by_decodes"]), c
s, t = c["synthetic_lm"].split(",")
assert abs(float(s) - c["step_us"]) < 0.1, c
# The engine's own time between steps, and the spread of the steps about the fit.
assert c["version"] == 6 and c["kind"] == "generation-steps", c
assert c["between_us"] > 0 and c["context_us"] >= 0, c
q = [p["q"] for p in c["spread"]]
r = [p["ratio"] for p in c["spread"]]
assert q == [0.01, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99], c["spread"]
assert r == sorted(r) and 0.8 < r[3] < 1.25, c["spread"]
PY
# What a generative run cannot do is refused, naming the flag.
if "$bin" bench --synthetic-lm 300,5 --duration 1 --target self-http --cost-out "$dir/x.json" 2>"$dir/err.txt"; then
  echo "--cost-out over HTTP was accepted"; exit 1
fi
grep -q -- "--cost-out $dir/x.json needs --target inproc" "$dir/err.txt"
# --target predict on a generative model is tested in tests/app/gen_predict.sh.
echo "ok"
