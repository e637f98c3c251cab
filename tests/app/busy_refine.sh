#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A run beside a CPU spinner (another process burning a core) is kept in the
# kept cost as evidence, labelled busy, and refines nothing; the run says so.
# Usage: busy_refine.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
fail() { echo "busy_refine: $*" >&2; exit 1; }
costs="$XDG_CACHE_HOME/batchscope/costs"
run=(bench --synthetic 300,20 --rate 2000 --duration 1 --seed 5 --max-batch-size 16 --no-history)

# The kept cost, made by a prediction.
"$bin" "${run[@]}" --target predict --calibration-seconds 1 >"$dir/made.txt" 2>&1 ||
  fail "made: $(tail -5 "$dir/made.txt")"
file=$(ls "$costs"/synthetic-*.json)
points() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["points"]))' "$file"; }
before=$(points)

# A spinner beside the live run: a child of this shell, not of batchscope.
( while :; do :; done ) &
spinner=$!
trap 'kill $spinner 2>/dev/null || true' EXIT
# Tests beside this one share the cores, so the spinner may get half of one.
BATCHSCOPE_BUSY_CORES=0.3 "$bin" "${run[@]}" --seed 6 >"$dir/busy.txt" 2>&1 ||
  fail "busy run: $(tail -5 "$dir/busy.txt")"
kill $spinner
grep -Eq "^  the kept cost was not refined: other processes used [0-9.]+ cores.*; the run is kept as evidence, labelled busy" \
  "$dir/busy.txt" || fail "not said: $(tail -5 "$dir/busy.txt")"
[[ $(points) == "$before" ]] || fail "the busy run moved t(b)"
python3 - "$file" <<'PY' || fail "evidence: $(head -c 600 "$file")"
import json, sys
m = json.load(open(sys.argv[1]))
ev = m["evidence"]
assert ev[-1]["busy"].startswith("other processes used"), ev[-1]
assert ev[-1]["points"] and ev[-1]["level"] > 0, ev[-1]
assert all(e.get("busy", "") == "" for e in ev[:-1]), ev  # the calibration's
PY
echo "a busy run is kept as evidence and refines nothing"
