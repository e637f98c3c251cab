#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope tune on the synthetic model: a search predicted for every
# configuration and confirmed live, its JSON and export; and the refusals,
# each with its exit code and a message naming what was wrong.
# Usage: tune_cli.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
mkdir -p "$dir"
# Kept costs go to a cache of this run's own, not the user's.
export XDG_CACHE_HOME="$dir/cache"

# refuse CODE TEXT ARGS...: the command exits CODE and stderr contains TEXT.
refuse() {
  local want=$1 text=$2
  shift 2
  local rc=0
  "$bin" tune "$@" >"$dir/out.txt" 2>"$dir/err.txt" || rc=$?
  if [[ $rc != "$want" ]] || ! grep -qF -- "$text" "$dir/err.txt"; then
    echo "tune $*: exit $rc (wanted $want), stderr:" >&2
    cat "$dir/err.txt" >&2
    exit 1
  fi
}
refuse 2 "--slo-p99-ms is required" --synthetic 500,20
refuse 2 "--slo-p99-ms = -1" --synthetic 500,20 --slo-p99-ms -1
refuse 2 "space entry 'max_batch_size=64..8'" --synthetic 500,20 --slo-p99-ms 5 \
  --space "max_batch_size=64..8"
refuse 2 "space entry 'colour=red'" --synthetic 500,20 --slo-p99-ms 5 --space "colour=red"
refuse 2 "--objective: expected throughput or latency, got 'speed'" --synthetic 500,20 \
  --slo-p99-ms 5 --objective speed
refuse 2 "unknown option --frobnicate" --synthetic 500,20 --slo-p99-ms 5 --frobnicate 1
refuse 2 "--calibrate: expected on or off, got 'maybe'" --synthetic 500,20 --slo-p99-ms 5 \
  --calibrate maybe
refuse 2 "--calibration-runs = 0" --synthetic 500,20 --slo-p99-ms 5 --calibration-runs 0
refuse 2 "--calibration-runs = 10" --synthetic 500,20 --slo-p99-ms 5 --calibration-runs 10
refuse 2 "--out needs --export FORMAT" --synthetic 500,20 --slo-p99-ms 5 --out x
refuse 2 "--export: " --synthetic 500,20 --slo-p99-ms 5 --export nginx
refuse 2 "max_batch_size = 8192 is out of range" --synthetic 500,20 --slo-p99-ms 5 \
  --space "max_batch_size=1..8192"
refuse 1 "--cost: cannot read /nonexistent.json" --synthetic 500,20 --slo-p99-ms 5 \
  --cost /nonexistent.json
echo '{"points": [{"batch": 1, "median_us": -3}]}' >"$dir/bad_cost.json"
refuse 1 "points[0].median_us" --synthetic 500,20 --slo-p99-ms 5 --cost "$dir/bad_cost.json"
# A batch costs at least 10 ms: no configuration gets p99 under 1 ms, and the
# error names the closest.
refuse 1 "closest: strategy=" --synthetic 10000,10 --rate 50 --duration 1 --slo-p99-ms 1 \
  --confirm 0

# A search with live confirmation: a cost model where batching pays (500 us a
# batch, 20 us a request) at a rate one request at a time cannot serve.
"$bin" tune --synthetic 500,20 --rate 3000 --duration 1 --seed 4 --slo-p99-ms 100 \
  --space "max_batch_size=1..64,max_wait_ms=0..5,lanes=1" --confirm 1 \
  --json "$dir/tune.json" --export json --out "$dir/best.json" >"$dir/tune.txt"
grep -q "Pareto front" "$dir/tune.txt"
grep -q "measured" "$dir/tune.txt"
# Before the search, one live run under the traffic calibrates t(b) for the
# space's one lane count.
grep -q "calibrating t(b) under the traffic (fifo, max_batch_size 64, max_wait 2 ms)" "$dir/tune.txt"
grep -Eq "^  1 lane\(s\): [0-9]+ batches, .*overhead p50 [0-9]+ us" "$dir/tune.txt"
grep -Eq "^    t\(b\) at [0-9]+ sizes \(b = [0-9]+\.\.[0-9]+\) moved by" "$dir/tune.txt"
! grep -q "2 lane(s)" "$dir/tune.txt"
grep -q "re-predicted with t(b) as the live runs ran it" "$dir/tune.txt"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/tune.json"))
assert r["evaluated"] == r["space_size"] > 20, (r["evaluated"], r["space_size"])
assert r["method"] == "exhaustive"
best = r["best"]
o = best["options"]
# One request at a time serves at most 1 / 520 us = 1923 req/s: the best batches.
assert o["max_batch_size"] > 1, o
assert best["predicted"]["p99_ms"] <= 100 and best["predicted"]["rejected"] == 0, best
assert "measured" in best and best["measured"]["throughput_rps"] > 0, best
assert r["pareto"] and all("throughput_rps" in p for p in r["pareto"])
# The winner is the one confirmed, or the best re-predicted after calibration
# when that is another, with the figures measured for it; each confirmation
# is predicted again with the calibrated t(b).
c = r["confirmed"]
assert 1 <= len(c) <= 2 and any(x["options"] == o for x in c), c
w = next(x for x in c if x["options"] == o)
assert abs(w["measured"]["p99_ms"] - best["measured"]["p99_ms"]) < 1e-6, (c, best)
assert all(x["recalibrated"]["p99_ms"] > 0 for x in c), c
saved = json.load(open(f"{d}/best.json"))
assert saved["max_batch_size"] == o["max_batch_size"], (saved, o)
assert saved["max_wait_us"] == o["max_wait_us"], (saved, o)
assert r["traffic"].startswith("poisson rate=3000/s"), r["traffic"]
PY
# export --config reads the result: its best's options, and its traffic and
# measured figures in the comments.
"$bin" export --config "$dir/tune.json" --format triton >"$dir/tuned.pbtxt"
grep -q "^# Tuned under traffic: poisson rate=3000/s" "$dir/tuned.pbtxt"
grep -q "^# Measured there: p50 " "$dir/tuned.pbtxt"
grep -q "^# Measured on cpu: " "$dir/tuned.pbtxt" ||
  { echo "the export does not name the hardware:"; grep "^#" "$dir/tuned.pbtxt"; exit 1; }
grep -q "max_batch_size: $(python3 -c "import json;print(json.load(open('$dir/tune.json'))['best']['options']['max_batch_size'])")" \
  "$dir/tuned.pbtxt"

# Predicted to meet the SLO on a cost far below the model's, and missed live:
# the tune fails, and its JSON holds no best to export.
echo '{"points": [{"batch": 1, "median_us": 10}, {"batch": 8, "median_us": 12}]}' \
  >"$dir/cheap_cost.json"
rc=0
"$bin" tune --synthetic 5000,10 --rate 50 --duration 1 --slo-p99-ms 1 --cost "$dir/cheap_cost.json" \
  --calibrate off --space "max_batch_size=1..8,max_wait_ms=0,lanes=1" --confirm 1 --no-history \
  --json "$dir/missed.json" >"$dir/missed.txt" 2>&1 || rc=$?
[[ $rc == 1 ]] || { echo "a live miss exited $rc"; cat "$dir/missed.txt"; exit 1; }
grep -q "measured live, none of the 1 best predictions meets the objective" "$dir/missed.txt"
python3 - "$dir/missed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["best"] is None and d["error"].startswith("measured live"), d.get("error")
assert len(d["confirmed"]) == 1 and d["confirmed"][0]["measured"]["p99_ms"] > 1, d["confirmed"]
assert d["traffic"].startswith("poisson rate=50/s"), d["traffic"]
PY
rc=0
"$bin" export --config "$dir/missed.json" --format json >"$dir/none.txt" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "the tune found no configuration: 'measured live" "$dir/none.txt"

# --calibrate off searches on the cost model as given.
"$bin" tune --synthetic 500,20 --rate 3000 --duration 1 --seed 4 --slo-p99-ms 100 \
  --space "max_batch_size=1..64,max_wait_ms=0..5,lanes=1" --confirm 0 --calibrate off \
  >"$dir/uncalibrated.txt"
! grep -q "calibrating" "$dir/uncalibrated.txt"
grep -q "best predicted" "$dir/uncalibrated.txt"

# --calibration-runs 3: three calibration runs, each one's level printed, the
# median's used.
"$bin" tune --synthetic 500,20 --rate 3000 --duration 0.5 --seed 4 --slo-p99-ms 100 \
  --space "max_batch_size=1..64,max_wait_ms=0..5,lanes=1" --confirm 0 --calibration-runs 3 \
  >"$dir/three.txt"
grep -q "max_wait 2 ms), 3 live runs per lane count" "$dir/three.txt"
grep -Eq "^  1 lane\(s\): t\(b\) over the cost's, run by run:( [0-9.]+( \(median, used\))?){3}$" \
  "$dir/three.txt"
[[ $(grep -o "(median, used)" "$dir/three.txt" | wc -l) == 1 ]]

# bench --target predict: the run the engine would record, with bench's exports.
"$bin" bench --synthetic 500,20 --rate 3000 --duration 1 --seed 4 --max-batch-size 8 \
  --max-wait-ms 0 --target predict --json "$dir/predict.json" \
  --trace-out "$dir/predict.trace.json" >"$dir/predict.txt"
grep -q "predicted: strategy=fifo max_batch_size=8" "$dir/predict.txt"
grep -Eq "^  other draws  p50 [0-9.]+\.\.[0-9.]+  p99 [0-9.]+\.\.[0-9.]+  \(the same traffic drawn again with 4 other seeds" "$dir/predict.txt"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/predict.json"))
assert s["config"]["target"] == "predict", s["config"]
assert s["sent"] > 2500 and s["ok"] == s["sent"], (s["sent"], s["ok"])
assert s["batch_size"]["mean"] > 1, s["batch_size"]
# The load driver's lag as the kept cost measured it: small at the median.
lag = s["send_lag_ms"]
assert 0 <= lag["p50"] <= lag["max"] and lag["p50"] < 1, lag
# The band, t(b) at the kept drift's ends, holds the prediction; beside it
# the p99 over four other draws of the traffic, which differ from this one's.
b = s["band"]
assert b["fast"] <= 1 <= b["slow"] and b["source"], b
p50, p99 = s["latency_ms"]["p50"], s["latency_ms"]["p99"]
assert b["latency_ms_fast"]["p50"] <= p50 <= b["latency_ms_slow"]["p50"], (b, p50)
assert b["draws"] == 4, b
lo, hi = b["latency_ms_draws_low"]["p99"], b["latency_ms_draws_high"]["p99"]
assert 0 < lo < hi, (lo, hi)
t = json.load(open(f"{d}/predict.trace.json"))
assert any(e.get("ph") == "X" for e in t["traceEvents"])
PY
echo "ok"
