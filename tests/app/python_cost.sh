#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A Python model's preprocess cost as a user meets it: the first prediction
# makes the kept cost with the preprocess measured on the class's examples
# (in the pool and in a lane, each with the requests behind it); a live run
# with a pool refines the pool's part, and one whose lanes prepare their own
# batches refines the lane's part and t(b) from the model's start. Each run
# says what moved, and the file keeps the requests counted.
# Usage: python_cost.sh BATCHSCOPE HANDLERS WORKDIR
set -euo pipefail
bin=$1
model=$2/slow_prepare.py
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
fail() { echo "python_cost: $*" >&2; exit 1; }
run=(bench --model "$model" --pattern closed --concurrency 8 --duration 2 --no-history)
# The pool's requests with 1 busy, and the lane's, in the kept file.
counts() {
  /usr/bin/python3 - "$XDG_CACHE_HOME"/batchscope/costs/slow_prepare-*.json <<'PY'
import json, sys
pre = json.load(open(sys.argv[1]))["preprocess"]
pool = {p["busy"]: p.get("requests", 0) for p in pre.get("pool", [])}
print(pool.get(1, 0), pre.get("lane_requests", 0))
PY
}

"$bin" "${run[@]}" --target predict --preprocess-workers 1 --calibration-seconds 1 \
  >"$dir/made.txt" 2>&1 || fail "made: $(tail -5 "$dir/made.txt")"
grep -Eq "preprocess [0-9]+ us a request in the pool, [0-9]+ us in a lane" "$dir/made.txt" ||
  fail "no preprocess measured: $(grep -m1 predicted "$dir/made.txt")"
read -r pool lane < <(counts)
(( pool > 0 && lane > 0 )) || fail "the profile's requests were not kept: pool $pool, lane $lane"

"$bin" "${run[@]}" --preprocess-workers 1 >"$dir/pool.txt" 2>&1 || fail "pool: $(tail -5 "$dir/pool.txt")"
line=$(grep "refined the kept preprocess cost" "$dir/pool.txt") || fail "pool run: $(tail -4 "$dir/pool.txt")"
[[ $line =~ "in the pool with 1 busy, "([0-9]+)" requests: "[0-9.]+" -> "[0-9.]+" ms" ]] ||
  fail "pool run: $line"
seen=${BASH_REMATCH[1]}
read -r pool2 lane2 < <(counts)
(( pool2 == pool + seen && lane2 == lane )) ||
  fail "pool counts $pool + $seen -> $pool2 (lane $lane -> $lane2)"

"$bin" "${run[@]}" --preprocess-workers 0 >"$dir/lane.txt" 2>&1 || fail "lane: $(tail -5 "$dir/lane.txt")"
grep -Eq "refined the kept cost \(1 lane\(s\), [0-9]+ batches" "$dir/lane.txt" ||
  fail "t(b) not refined by the lane's run: $(tail -4 "$dir/lane.txt")"
line=$(grep "refined the kept preprocess cost" "$dir/lane.txt") || fail "lane run: $(tail -4 "$dir/lane.txt")"
[[ $line =~ "in a lane, "([0-9]+)" requests" ]] || fail "lane run: $line"
seen=${BASH_REMATCH[1]}
read -r pool3 lane3 < <(counts)
(( lane3 == lane + seen && pool3 == pool2 )) || fail "lane counts $lane + $seen -> $lane3"
echo "python_cost: ok (pool $pool -> $pool3 requests, lane $lane -> $lane3)"
