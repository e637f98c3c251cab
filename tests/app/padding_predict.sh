#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Predictions for a model whose inputs vary in length, as a user meets them:
# `profile` on the shipped text classifier writes t(b, L); `bench --target
# predict` with that cost prices each batch at its padded length and
# reports the padding waste of each policy; `tune` searches the padding
# policies and bucket sets fitted to the lengths, and its winner's options
# carry them; a cost without t(b, L) is noted; --seq-len on a model whose
# inputs do not vary is refused by name.
# Usage: padding_predict.sh BATCHSCOPE MODELS_DIR WORKDIR
set -euo pipefail
bin=$1
models=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache" XDG_CONFIG_HOME="$dir/config"
model="$models/text_classifier.pt"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$bin" profile --model "$model" --max-batch 8 --lengths 64,256 --seconds-per-point 0.02 \
  --json "$dir/cost.json" >"$dir/profile.txt"
grep -q "t(b, L) us, by padded length L" "$dir/profile.txt" || fail "profile printed no grid"
python3 - "$dir/cost.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["length_grid"]
assert g["reference"] == 16, g
# The lengths asked, and any middles measured where a step jumped.
assert {16, 64, 256} <= set(g["lengths"]) and g["lengths"] == sorted(set(g["lengths"])), g
assert g["batches"] == [1, 2, 4, 8], g
n = len(g["lengths"])
assert all(len(row) == n for row in g["median_us"]), g
assert all(v > 0 for row in g["median_us"] for v in row), g
PY

# The same traffic through each policy, predicted: waste falls with buckets.
for p in longest buckets sorted; do
  "$bin" bench --model "$model" --target predict --cost "$dir/cost.json" --no-history \
    --rate 400 --duration 5 --seq-len lognormal:32,1,256 --max-batch-size 8 --max-wait-ms 4 \
    --padding "$p" --length-buckets 32,64,128,256 --json "$dir/$p.json" >"$dir/$p.txt" 2>&1
  grep -q "lengths: lognormal" "$dir/$p.txt" || fail "$p: the lengths were not named"
  if grep -q "has no t(b, L)" "$dir/$p.txt"; then fail "$p: the grid was not read"; fi
done
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
w = {p: json.load(open(f"{d}/{p}.json"))["padding"]["waste"] for p in ("longest", "buckets", "sorted")}
assert w["longest"] > 0.1, w
assert w["buckets"] < w["longest"] / 2, w
assert w["sorted"] <= w["longest"], w
PY

# A cost without t(b, L): noted, and still predicted.
python3 - "$dir/cost.json" "$dir/flat.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["length_grid"]
json.dump(c, open(sys.argv[2], "w"))
PY
"$bin" bench --model "$model" --target predict --cost "$dir/flat.json" --no-history \
  --rate 100 --duration 1 >"$dir/flat.txt" 2>&1
grep -q "has no t(b, L)" "$dir/flat.txt" || fail "a cost without t(b, L) was not noted"

# tune searches the padding policies and bucket sets fitted to the lengths.
# The cost was measured on this machine, as loaded as it is: whether any
# configuration meets the objective depends on it, so a tune that says none
# does (exit 1, with the closest) is read as well as one with a winner.
rc=0
"$bin" tune --model "$model" --cost "$dir/cost.json" --calibrate off --confirm 0 --no-history \
  --rate 400 --duration 5 --slo-p99-ms 40 --budget-s 60 --json "$dir/tune.json" \
  >"$dir/tune.txt" 2>&1 || rc=$?
if [ "$rc" != 0 ] && ! { [ "$rc" = 1 ] && grep -q "no configuration meets" "$dir/tune.txt"; }; then
  cat "$dir/tune.txt" >&2
  fail "tune failed"
fi
grep -q "padding=longest|buckets|sorted,length_buckets=" "$dir/tune.txt" ||
  fail "tune's space has no padding entries"
grep -q "batches priced at their padded length" "$dir/tune.txt" || fail "tune did not read t(b, L)"
python3 - "$dir/tune.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
assert "padding=" in t["space"], t["space"]
# The winner, or where none met the objective, the front's first point.
o = t["best"]["options"] if isinstance(t["best"], dict) else t["pareto"][0]["options"]
assert o["padding"] in ("longest", "buckets", "sorted"), o
assert "length_buckets" in o, o
PY

# --seq-len where no input varies.
if "$bin" tune --model "$models/mlp.pt" --seq-len fixed:8 --slo-p99-ms 10 --confirm 0 \
  --no-history >"$dir/refused.txt" 2>&1; then
  fail "--seq-len on mlp was accepted"
fi
grep -q "has no input that varies in length" "$dir/refused.txt" || fail "--seq-len refusal unclear"
echo "padding_predict: ok"
