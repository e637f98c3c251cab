#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The kept cost as a user meets it: the first prediction on a model makes it
# (profile, then a live calibration per lane count) in $XDG_CACHE_HOME, later
# ones reuse it, an in-process run refines it, a second lane count is added
# when asked for, --recalibrate makes it anew, --cost wins, and a file made
# for another model file or machine is refused by name and made anew.
# Usage: cost_cache.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
fail() { echo "cost_cache: $*" >&2; exit 1; }
costs="$XDG_CACHE_HOME/batchscope/costs"
predict=(bench --synthetic 300,20 --rate 2000 --duration 1 --seed 5 --max-batch-size 16
         --target predict --no-history --calibration-seconds 1)

# First use: made, with a progress line per step, and kept.
"$bin" "${predict[@]}" >"$dir/first.txt" 2>&1 || fail "first: $(tail -5 "$dir/first.txt")"
grep -q "no calibrated cost of synthetic on this machine yet; making $costs/synthetic-" \
  "$dir/first.txt" || fail "not made: $(head -3 "$dir/first.txt")"
grep -Eq "calibrating 1 lane\(s\) under load: 1 s \(a closed loop of [0-9]+ in flight" \
  "$dir/first.txt" || fail "no calibration line: $(cat "$dir/first.txt")"
grep -Eq "capacity [0-9]+ req/s; steps at [0-9]+\.\.[0-9]+ req/s: [0-9]+ batches" \
  "$dir/first.txt" || fail "no capacity line: $(cat "$dir/first.txt")"
grep -q "  cost: made now in $costs/synthetic-" "$dir/first.txt" || fail "source: $(cat "$dir/first.txt")"
file=$(ls "$costs"/synthetic-*.json)
[[ $(ls "$costs" | wc -l) == 1 ]] || fail "one file wanted: $(ls "$costs")"
python3 - "$file" <<'PY' || fail "the file: $(head -c 400 "$file")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["version"] == 3 and m["made_for"]["model_id"].startswith("synthetic:300,20,"), m["made_for"]
assert "machine" in m["made_for"]["machine"], m["made_for"]
live = [p for p in m["points"] if p.get("batches", 0) > 0]
assert live and all(p["measured_at"].endswith("Z") for p in live), m["points"][:3]
assert "overhead_us_quantiles" in m
PY

# Second use: read, not made.
"$bin" "${predict[@]}" >"$dir/second.txt" 2>&1 || fail "second: $(tail -5 "$dir/second.txt")"
grep -q "  cost: cached in $file" "$dir/second.txt" || fail "not reused: $(head -5 "$dir/second.txt")"
! grep -q "calibrating" "$dir/second.txt" || fail "calibrated again"

# An in-process run refines it, and says so.
before=$(python3 -c 'import json,sys; print(sum(p.get("batches",0) for p in json.load(open(sys.argv[1]))["points"]))' "$file")
"$bin" bench --synthetic 300,20 --rate 2000 --duration 1 --seed 6 --max-batch-size 16 --no-history \
  >"$dir/live.txt" 2>&1 || fail "live: $(tail -5 "$dir/live.txt")"
grep -Eq "^  refined the kept cost \(1 lane\(s\), [0-9]+ batches at [0-9]+ sizes: b [0-9]+ [0-9]+ -> [0-9]+ us" \
  "$dir/live.txt" || fail "not refined: $(tail -5 "$dir/live.txt")"
after=$(python3 -c 'import json,sys; print(sum(p.get("batches",0) for p in json.load(open(sys.argv[1]))["points"]))' "$file")
(( after > before )) || fail "batches $before -> $after"

# Two lanes: the lane count the file lacks is calibrated and added.
"$bin" "${predict[@]}" --lanes 2 >"$dir/two.txt" 2>&1 || fail "two: $(tail -5 "$dir/two.txt")"
grep -q "has no calibration with 2 lane(s); adding it" "$dir/two.txt" || fail "two: $(head -3 "$dir/two.txt")"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert [l["lanes"] for l in m["lanes"]] == [2], m.get("lanes")' \
  "$file" || fail "no two-lane curve"

# --cost wins over the kept cost; --recalibrate makes it anew.
echo '{"points": [{"batch": 1, "median_us": 900}, {"batch": 2, "median_us": 950}]}' >"$dir/given.json"
"$bin" "${predict[@]}" --cost "$dir/given.json" >"$dir/given.txt" 2>&1 || fail "given"
grep -q "  cost: --cost $dir/given.json" "$dir/given.txt" || fail "--cost: $(head -3 "$dir/given.txt")"
"$bin" "${predict[@]}" --recalibrate >"$dir/again.txt" 2>&1 || fail "recalibrate"
grep -q "making $file" "$dir/again.txt" || fail "--recalibrate: $(head -3 "$dir/again.txt")"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert "lanes" not in m, m["lanes"]' \
  "$file" || fail "--recalibrate kept the old two-lane curve"

# A file made on another machine, or for another model file, is refused by name
# and made anew; named with --cost, it is used and noted.
python3 - "$file" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["made_for"]["machine"]["machine"]["host"] = "elsewhere"
m["made_for"]["machine"]["machine"]["cpu"] = "another CPU"
json.dump(m, open(sys.argv[1], "w"))
PY
cp "$file" "$dir/foreign.json"
"$bin" "${predict[@]}" --cost "$dir/foreign.json" >"$dir/noted.txt" 2>&1 || fail "noted"
grep -q "note: $dir/foreign.json was made on another machine (" "$dir/noted.txt" \
  || fail "no note: $(cat "$dir/noted.txt")"
"$bin" "${predict[@]}" >"$dir/foreign.txt" 2>&1 || fail "foreign"
grep -q "refused the kept cost: $file was made on another machine (machine.cpu \"another CPU\", here " \
  "$dir/foreign.txt" || fail "foreign not refused: $(head -3 "$dir/foreign.txt")"
grep -q "host \"elsewhere\", here " "$dir/foreign.txt" || fail "host not named"
grep -q "making $file" "$dir/foreign.txt" || fail "not made anew"

# A file made for another model (here another synthetic formula; a model
# file's SHA-256 in app_tests) where this model's kept cost should be is
# refused as stale and made anew.
"$bin" "${predict[@]/300,20/300,21}" >"$dir/other.txt" 2>&1 || fail "other: $(tail -3 "$dir/other.txt")"
other=$(ls "$costs"/synthetic-*.json | grep -v "$file")
cp "$file" "$other"
"$bin" "${predict[@]/300,20/300,21}" >"$dir/stale.txt" 2>&1 || fail "stale run"
grep -q "refused the kept cost: $other is stale: it was made for \"synthetic:300,20,0,0,spin\", and the model is now \"synthetic:300,21,0,0,spin\" (the file changed)" \
  "$dir/stale.txt" || fail "stale not refused: $(head -3 "$dir/stale.txt")"
grep -q "making $other" "$dir/stale.txt" || fail "stale not made anew"
echo "kept costs: made, reused, refined, extended, recalibrated, overridden and refused as they should"
