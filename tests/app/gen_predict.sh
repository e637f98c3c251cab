#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# bench --target predict on a generative model: the synthetic model's own
# cost gives the same prediction every time, every request answered; a
# TorchScript model priced by a step cost file names the file and its
# figures; what a prediction cannot do is refused by name.
# Usage: gen_predict.sh BATCHSCOPE WORKDIR [SOURCE_DIR, where LibTorch is built in]
set -euo pipefail
bin=$1
dir=$2
src=${3:-}
rm -rf "$dir/cache"  # the first prediction below makes the kept step cost
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
for i in 1 2; do
  "$bin" bench --synthetic-lm 2000,20 --target predict --rate 20 --duration 3 --seed 4 \
    --json "$dir/synthetic_$i.json" --no-history >"$dir/synthetic_$i.txt"
done
grep -q "step cost: 2000.0 us + 20.000 us per decode + 20.000 us per prompt token (the synthetic model's own cost)" \
  "$dir/synthetic_1.txt"
cmp "$dir/synthetic_1.json" "$dir/synthetic_2.json"
python3 - "$dir/synthetic_1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["target"] == "predict", d["config"]
s = d["summary"]
assert s["sent"] > 40 and s["ok"] == s["sent"] and s["failed"] == 0, s
# A step is 2 ms plus 20 us per token: no gap is shorter, the median one is
# a step of a few sequences.
assert 2.0 <= s["itl_ms"]["p50"] < 2.4, s["itl_ms"]
assert s["steps"] > 500, s
PY
if [ -n "$src" ]; then
  "$bin" bench --model "$src/models/tiny_lm.pt" --target predict --cost "$src/docs/profiles/tiny_lm_h200.json" \
    --pattern closed --concurrency 32 --duration 2 --max-num-seqs 32 --no-history >"$dir/tiny.txt"
  grep -q "step cost: 2121.1 us + 20.276 us per decode + 57.975 us per prompt token (.*tiny_lm_h200.json)" "$dir/tiny.txt"
  grep -q "predict" "$dir/tiny.txt"
fi
if [ -n "$src" ]; then
  # The step cost is kept per model and machine: made by the first
  # prediction, reused by the next, refined by a live run, made anew by
  # --recalibrate, and refused (then made anew) when it came from elsewhere.
  lm=(--model "$src/models/tiny_lm.pt" --rate 20 --duration 1 --no-history)
  "$bin" bench "${lm[@]}" --target predict --calibration-seconds 2 >"$dir/kept1.txt"
  grep -q "measuring the step cost" "$dir/kept1.txt"
  grep -q "(a live calibration of [0-9]* steps, kept in $dir/cache/batchscope/costs/tiny_lm-[0-9a-f]*-steps.json)" \
    "$dir/kept1.txt"
  "$bin" bench "${lm[@]}" --target predict >"$dir/kept2.txt"
  ! grep -q "measuring the step cost" "$dir/kept2.txt"
  grep -q "(kept in $dir/cache/batchscope/costs/tiny_lm-[0-9a-f]*-steps.json, [0-9]* steps)" "$dir/kept2.txt"
  "$bin" bench "${lm[@]}" >"$dir/kept3.txt"
  grep -q "kept step cost refined by [0-9]* steps" "$dir/kept3.txt"
  "$bin" bench "${lm[@]}" --target predict --recalibrate --calibration-seconds 2 >"$dir/kept4.txt"
  grep -q "measuring the step cost" "$dir/kept4.txt"
  kept=$(ls "$dir"/cache/batchscope/costs/tiny_lm-*-steps.json)
  sed -i 's/"host":"[^"]*"/"host":"elsewhere"/' "$kept"
  "$bin" bench "${lm[@]}" --target predict --calibration-seconds 2 >"$dir/kept5.txt"
  grep -q "was made on another machine.*; measuring it anew" "$dir/kept5.txt"
  # Another lane count has a fit of its own: measured live when first
  # needed, refined by a live run at that count.
  "$bin" bench "${lm[@]}" --lanes 2 --target predict --calibration-seconds 2 >"$dir/lanes1.txt"
  grep -q "measuring the step cost at 2 lanes" "$dir/lanes1.txt"
  grep -q "; at 2 lanes [0-9.]* us + [0-9.]* us per decode" "$dir/lanes1.txt"
  "$bin" bench "${lm[@]}" --lanes 2 >"$dir/lanes2.txt"
  grep -q "num_lanes=2" "$dir/lanes2.txt"
  grep -q "kept step cost at 2 lanes refined" "$dir/lanes2.txt"
  # A cost file measured at one lane has nothing for two.
  rc=0
  "$bin" bench "${lm[@]}" --lanes 2 --target predict --cost "$src/docs/profiles/tiny_lm_h200.json" \
    >"$dir/lanes3.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc"; cat "$dir/lanes3.txt"; exit 1; }
  grep -q "was measured at 1 lane(s) and has no fit at 2" "$dir/lanes3.txt"
fi
# profile on a generative model: the step cost over a grid, as a cost file.
"$bin" profile --synthetic-lm 300,5 --max-seqs 4 --max-batched-tokens 32 --runs 3 \
  --json "$dir/prof.json" >"$dir/prof.txt"
grep -q "fit over 54 steps: " "$dir/prof.txt"
python3 - "$dir/prof.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["kind"] == "generation-steps" and c["version"] == 6, c
assert c["steps"] == 54 and c["decode_steps"] == 45, c  # (3 prefills + 3 decode counts x 5 positions) x 3
assert 280 <= c["step_us"] < 1000 and c["between_us"] == 0, c
assert c["spread"] and c["by_decodes"], c
PY
if "$bin" profile --synthetic-lm 300,5 --lanes 2 >/dev/null 2>"$dir/prof_err.txt"; then
  echo "--lanes on a generative model was accepted"; exit 1
fi
grep -q "unknown option --lanes for a generative model" "$dir/prof_err.txt"
if [ -n "$src" ]; then
  "$bin" profile --model "$src/models/tiny_lm.pt" --max-seqs 4 --max-batched-tokens 32 --runs 3 \
    --json "$dir/tiny_prof.json" >"$dir/tiny_prof.txt"
  "$bin" bench --model "$src/models/tiny_lm.pt" --target predict --cost "$dir/tiny_prof.json" \
    --rate 20 --duration 1 --no-history >"$dir/tiny_prof_predict.txt"
  grep -q "step cost: .* (.*tiny_prof.json)" "$dir/tiny_prof_predict.txt"
fi
refused() {  # EXPECTED_TEXT ARGS...: exits 2 and prints the text
  local want=$1 rc=0
  shift
  "$bin" bench "$@" --no-history >"$dir/refused.txt" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc for $*"; cat "$dir/refused.txt"; exit 1; }
  grep -qF -- "$want" "$dir/refused.txt" || { echo "no '$want' for $*"; cat "$dir/refused.txt"; exit 1; }
}
refused "--cost c.json: --synthetic-lm S,T is its own step cost" --synthetic-lm 100,1 --target predict --cost c.json
refused "--cost c.json prices a prediction; add --target predict" --synthetic-lm 100,1 --cost c.json
refused "--plot needs a live run" --synthetic-lm 100,1 --target predict --plot p.png
echo '{"step_us": "fast", "token_us": 1, "prefill_token_us": 1}' >"$dir/bad.json"
if [ -n "$src" ]; then
  refused "\"step_us\" must be a number of microseconds from 0 to 10 s, not \"fast\"" \
    --model "$src/models/tiny_lm.pt" --target predict --cost "$dir/bad.json"
fi
echo ok
