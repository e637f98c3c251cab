#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope bench writes every export, and each one loads back: the JSON
# summary has its keys and agrees with the CSV, the trace has the fields
# Perfetto needs, and the PNG is a real image of the requested kind.
# Usage: bench_exports.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
mkdir -p "$dir"
# Kept costs go to a cache of this run's own, not the user's.
export XDG_CACHE_HOME="$dir/cache"
"$bin" bench --synthetic 200,10 --pattern burst --rate 3000 --rate-low 300 --on 0.2 --off 0.2 \
  --duration 1.2 --seed 7 --json "$dir/run.json" --csv "$dir/run" --trace-out "$dir/run.trace.json" \
  --plot "$dir/run.png" >"$dir/out.txt"
grep -q "wrote $dir/run.png" "$dir/out.txt"
python3 - "$dir" <<'PY'
import csv, json, sys
d = sys.argv[1]
s = json.load(open(d + "/run.json"))
for k in ["sent", "ok", "rejected", "timed_out", "errors", "throughput_rps", "latency_ms",
          "batch_size", "queue_depth", "config", "pattern", "windows"]:
    assert k in s, "summary lacks " + k
for k in ["p50", "p90", "p95", "p99", "p999", "max", "mean"]:
    assert k in s["latency_ms"], "latency_ms lacks " + k
assert s["sent"] > 300 and s["ok"] == s["sent"], (s["sent"], s["ok"])
assert s["pattern"].startswith("burst"), s["pattern"]
rows = list(csv.DictReader(open(d + "/run_requests.csv")))
assert len(rows) == s["sent"], (len(rows), s["sent"])
assert all(r["outcome"] == "ok" and float(r["latency_ms"]) >= 0 for r in rows)
wins = list(csv.DictReader(open(d + "/run_windows.csv")))
assert len(wins) == len(s["windows"]) and sum(int(w["sent"]) for w in wins) == s["sent"]
t = json.load(open(d + "/run.trace.json"))
ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
assert ev and all(k in e for e in ev for k in ("name", "ts", "dur", "pid", "tid")), "trace fields"
assert any(e["name"].startswith("batch") for e in ev) and any(e["name"].startswith("request") for e in ev)
png = open(d + "/run.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, len(png)
print("exports load back:", s["sent"], "requests,", len(wins), "windows,", len(ev), "trace events")
PY

# --cost-out on an existing cost file refines it: the sizes the run saw take
# their live medians, the rest are scaled by the nearest ratio. The file says
# t(b) is twice the synthetic model's 200 + 10 b us.
echo '{"points": [{"batch": 1, "median_us": 420}, {"batch": 2, "median_us": 440},
  {"batch": 64, "median_us": 1680}]}' >"$dir/cost.json"
"$bin" bench --synthetic 200,10 --pattern constant --rate 4000 --duration 1 --seed 3 \
  --max-batch-size 2 --max-wait-ms 5 --cost-out "$dir/cost.json" >"$dir/refine.txt"
grep -q "refined $dir/cost.json with t(b) at b = " "$dir/refine.txt"
python3 - "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/cost.json"))
assert m["format"] == "batchscope-cost" and m["version"] == 3, m
pts = {p["batch"]: p for p in m["points"]}
# b = 2 ran (4000/s against batches of 2 capped at 2): about 220 us, not 440.
assert 2 in pts and 200 <= pts[2]["median_us"] < 400, pts
assert len(pts[2]["run_quantiles"]) == 65, pts[2]
# b = 64 never ran: scaled by b = 2's ratio, so well below the 1680 given.
assert 64 in pts and pts[64]["median_us"] < 1680 * 0.95, pts[64]
print("refined: b = 2 at", round(pts[2]["median_us"]), "us, b = 64 at", round(pts[64]["median_us"]))
PY
# A file that is not a cost file is refused before the run, and kept.
echo 'not json' >"$dir/notes.txt"
rc=0
"$bin" bench --synthetic 200,10 --duration 1 --cost-out "$dir/notes.txt" 2>"$dir/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--cost-out: $dir/notes.txt: profile JSON: not valid JSON" "$dir/err.txt"
grep -qx 'not json' "$dir/notes.txt"
rc=0
"$bin" bench --synthetic 200,10 --duration 1 --target predict --cost-out "$dir/p.json" 2>"$dir/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--cost-out $dir/p.json needs --target inproc or self-http" "$dir/err.txt"
echo "cost-out refines a cost file and refuses what is not one"

# --plan-cost: the adaptive strategy plans on a cost file, read before the
# run and named in what bench prints; refused where nothing would read it,
# as --cost is on a live run.
"$bin" bench --synthetic 200,10 --duration 1 --seed 3 --rate 3000 --strategy adaptive \
  --target-p99-ms 5 --plan-cost "$dir/cost.json" --json "$dir/planned.json" >"$dir/planned.txt"
grep -q "adaptive plans on $dir/cost.json (t(b) from" "$dir/planned.txt"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["sent"] > 2000 and s["ok"] == s["sent"], s' \
  "$dir/planned.json"
"$bin" bench --synthetic 200,10 --duration 1 --seed 3 --rate 3000 --strategy adaptive \
  --target-p99-ms 5 --plan-cost "$dir/cost.json" --target predict >"$dir/planned_p.txt"
grep -q "predicted (t(b) from" "$dir/planned_p.txt"
rc=0
"$bin" bench --synthetic 200,10 --duration 1 --plan-cost "$dir/cost.json" 2>"$dir/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--plan-cost $dir/cost.json is read by the adaptive strategy of an inproc, self-http or predict run; this run has target inproc and strategy fifo" "$dir/err.txt"
rc=0
"$bin" bench --synthetic 200,10 --duration 1 --strategy adaptive --plan-cost "$dir/notes.txt" 2>"$dir/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--plan-cost: $dir/notes.txt: profile JSON: not valid JSON" "$dir/err.txt"
rc=0
"$bin" bench --synthetic 200,10 --duration 1 --cost "$dir/cost.json" 2>"$dir/err.txt" || rc=$?
[ "$rc" = 2 ] && grep -q -- "--cost $dir/cost.json is read by --target predict alone; this run has target inproc" "$dir/err.txt"
echo "plan-cost plans the adaptive strategy on a cost file; cost and plan-cost are refused where nothing reads them"
