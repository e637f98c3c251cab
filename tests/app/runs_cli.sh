#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The run history from the command line, on a real SQLite file: bench keeps
# its runs (with the machine and model file), runs list/show/compare/export/
# rm/import read and change them, and unfit history files give one warning
# while bench goes on. Every refusal names what was wrong.
# Usage: runs_cli.sh BATCHSCOPE WORKDIR [MODEL.pt]
set -euo pipefail
bin=$1
dir=$2
model=${3:-}
rm -rf "$dir"
mkdir -p "$dir"
# Kept costs go to a cache of this run's own, not the user's.
export XDG_CACHE_HOME="$dir/cache"
cd "$dir"
export BATCHSCOPE_HISTORY=$dir/history.sqlite

fail() {
  echo "runs_cli: $*" >&2
  exit 1
}
# refuse CODE TEXT ARGS...: batchscope ARGS exits CODE and stderr contains TEXT.
refuse() {
  local want=$1 text=$2
  shift 2
  local rc=0
  "$bin" "$@" >out.txt 2>err.txt || rc=$?
  if [[ $rc != "$want" ]] || ! grep -qF -- "$text" err.txt; then
    echo "$*: exit $rc (wanted $want), stderr:" >&2
    cat err.txt >&2
    exit 1
  fi
}

# Nothing kept yet: list says so, and makes no file.
"$bin" runs list >out.txt
grep -q "nothing has been kept yet" out.txt || fail "empty list: $(cat out.txt)"
[[ ! -e history.sqlite ]] || fail "runs list made a history file"

# Two bench runs with different options, kept with their context.
"$bin" bench --synthetic 200,20 --rate 400 --duration 0.5 --max-batch-size 8 --json a.json >a.txt
grep -q "kept as run 1 in $BATCHSCOPE_HISTORY" a.txt || fail "first run not kept: $(cat a.txt)"
"$bin" bench --synthetic 200,20 --rate 400 --duration 0.5 --max-batch-size 16 >b.txt
grep -q "kept as run 2 in" b.txt || fail "second run not kept: $(cat b.txt)"
# --no-history keeps nothing; --history FILE keeps it elsewhere.
"$bin" bench --synthetic 200,20 --rate 400 --duration 0.2 --no-history >c.txt
! grep -q "kept as run" c.txt || fail "--no-history kept the run"
"$bin" bench --synthetic 200,20 --rate 400 --duration 0.2 --history other.sqlite >c.txt
grep -q "kept as run 1 in other.sqlite" c.txt || fail "--history FILE: $(cat c.txt)"

"$bin" runs list >list.txt
[[ $(grep -c " bench " list.txt) == 2 ]] || fail "list: $(cat list.txt)"
head -2 list.txt | tail -1 | grep -q "^    2 " || fail "newest first: $(cat list.txt)"
"$bin" runs list --kind tune >list.txt
grep -q "no runs in .* match" list.txt || fail "--kind tune: $(cat list.txt)"
"$bin" runs list --since 2000-01-01 --model synthetic >list.txt
[[ $(grep -c " bench " list.txt) == 2 ]] || fail "--since --model: $(cat list.txt)"

# show: options, figures and what it ran on.
"$bin" runs show 1 >show.txt
grep -q "max_batch_size=8" show.txt || fail "show options: $(cat show.txt)"
grep -q "throughput_rps" show.txt || fail "show figures: $(cat show.txt)"
grep -q "machine.cpu" show.txt || fail "show machine: $(cat show.txt)"
grep -q "machine.cores" show.txt || fail "show cores: $(cat show.txt)"
# The 0.5 s run's times: when its traffic started and ended, to the millisecond.
grep -Eq "started   [0-9-]+ [0-9:]+\.[0-9]{3} UTC" show.txt || fail "show started: $(cat show.txt)"
grep -Eq "duration  0\.(4|5)[0-9]* s" show.txt || fail "show duration: $(cat show.txt)"
version=$("$bin" --version | sed -n '1s/^batchscope \([0-9.]*\).*/\1/p')
grep -qE "batchscope.version +$version\$" show.txt || fail "show does not name Batchscope $version: $(cat show.txt)"
# The figures are the ones bench wrote to --json.
want=$(python3 -c 'import json; print(json.load(open("a.json"))["sent"])')
grep -qE "^  sent +$want\$" show.txt || fail "show's sent is not the --json one ($want): $(cat show.txt)"

# compare: the figures side by side, and the option that differs.
"$bin" runs compare 1 2 >cmp.txt
grep -q "^throughput_rps" cmp.txt || fail "compare figures: $(cat cmp.txt)"
grep -qE "options.max_batch_size +8  \|  16" cmp.txt || fail "compare context: $(cat cmp.txt)"

# export: what bench would have written.
"$bin" runs export 1 --format json --out e.json >/dev/null
python3 - <<'EOF' || fail "exported JSON differs from bench --json"
import json
a, e = json.load(open("a.json")), json.load(open("e.json"))
assert a["sent"] == e["sent"] and a["latency_ms"] == e["latency_ms"], (a["sent"], e["sent"])
EOF
"$bin" runs export 1 --format csv --out e >/dev/null
[[ $(($(wc -l <e_requests.csv) - 1)) == "$want" ]] || fail "CSV rows: $(wc -l <e_requests.csv)"
[[ -s e_windows.csv ]] || fail "no windows CSV"
"$bin" runs export 2 --format trace --out e.trace.json >/dev/null
python3 -c 'import json; t = json.load(open("e.trace.json")); assert t["traceEvents"]' \
  || fail "trace export"
if "$bin" --version | grep -q "^Qt"; then
  QT_QPA_PLATFORM=offscreen "$bin" runs export 2 --format png --out e.png >/dev/null
  [[ $(head -c 4 e.png | tail -c 3) == PNG ]] || fail "png export"
  QT_QPA_PLATFORM=offscreen "$bin" runs compare 1 2 --plot cmp.png >cmp.txt
  grep -q "wrote cmp.png" cmp.txt || fail "compare --plot: $(cat cmp.txt)"
  [[ $(head -c 4 cmp.png | tail -c 3) == PNG ]] || fail "compare --plot wrote no PNG"
fi

# import: a bench --json summary becomes a run with its figures.
"$bin" runs import a.json >imp.txt
grep -q "kept a.json as run 3" imp.txt || fail "import: $(cat imp.txt)"
"$bin" runs show 3 | grep -q "(imported)" || fail "imported run"
echo '{"sent": 5}' >bad.json
refuse 1 'not a bench --json summary: it has no number "ok"' runs import bad.json
echo 'not json at all' >bad.json
refuse 1 "not a bench --json summary: the file is not JSON" runs import bad.json

# rm, and the refusals.
"$bin" runs rm 3 | grep -q "removed run 3" || fail "rm"
refuse 2 "no run 3 in history" runs show 3
refuse 1 "no run 3 in history" runs rm 3
refuse 2 "run id 'abc' is not a run id" runs show abc
refuse 2 "runs compare takes two ids" runs compare 1
refuse 2 "--format xml is not one of json, csv, trace, png" runs export 1 --format xml --out x
refuse 2 "--since yesterday is not a date" runs list --since yesterday
refuse 2 "--kind served is not one of bench, tune, recorded, generation, serve" runs list --kind served
refuse 2 "unknown subcommand frob" runs frob
refuse 2 "--history-requests = -1" bench --synthetic 200,20 --duration 0.1 --history-requests -1

# The request cap: a run cut is said to be cut.
"$bin" bench --synthetic 200,20 --rate 1000 --duration 0.5 --history-requests 10 >cap.txt
grep -q "(10 of .* requests: --history-requests)" cap.txt || fail "cap: $(cat cap.txt)"
id=$(sed -n 's/.*kept as run \([0-9]*\).*/\1/p' cap.txt)
"$bin" runs show "$id" | grep -q "10 kept of .* (cut by --history-requests)" || fail "cap show"

# A generation bench is kept with its requests' token timings.
"$bin" bench --synthetic-lm 2000,50 --rate 10 --duration 1 >gen.txt
gen_id=$(sed -n 's/.*kept as run \([0-9]*\) in.*/\1/p' gen.txt)
[[ -n $gen_id ]] || fail "generation run not kept: $(tail -3 gen.txt)"
"$bin" runs show "$gen_id" >gshow.txt
grep -qE "^  ttft_p99_ms +[0-9.]+" gshow.txt || fail "generation figures: $(cat gshow.txt)"
grep -q "scheduling=continuous" gshow.txt || fail "generation options: $(cat gshow.txt)"
gsent=$(sed -n 's/^  sent  *\([0-9]*\)$/\1/p' gshow.txt)
"$bin" runs export "$gen_id" --format csv --out g >/dev/null
[[ $(($(wc -l <g_requests.csv) - 1)) == "$gsent" ]] || fail "generation CSV rows: $(wc -l <g_requests.csv), sent $gsent"
"$bin" runs export "$gen_id" --format trace --out g.trace.json >/dev/null
python3 -c 'import json, sys; t = json.load(open("g.trace.json")); assert any(e.get("name", "").startswith("step") or e.get("cat") == "step" for e in t["traceEvents"]), "no steps"' \
  || fail "generation trace has no steps: $(head -c 300 g.trace.json)"
if "$bin" --version | grep -q "^Qt"; then
  QT_QPA_PLATFORM=offscreen "$bin" runs export "$gen_id" --format png --out g.png >/dev/null
  [[ $(head -c 4 g.png | tail -c 3) == PNG ]] || fail "generation png export"
fi
"$bin" bench --synthetic-lm 2000,50 --rate 10 --duration 0.5 --no-history --json gen.json >/dev/null
"$bin" runs import gen.json | grep -q "kept gen.json as run" || fail "generation import"
"$bin" runs list --kind generation | grep -q "(imported)" || fail "imported generation run not listed"

# A tune is kept with its live confirmation runs under it; removing it
# removes them.
"$bin" tune --synthetic 500,20 --rate 500 --duration 0.5 --slo-p99-ms 5000 --confirm 1 --calibrate off \
  --budget-s 60 --space "max_batch_size=1..16,max_wait_ms=0..2" >tune.txt
tune_id=$(sed -n 's/.*kept as run \([0-9]*\) (with its \([0-9]*\) live run.*/\1/p' tune.txt)
live=$(sed -n 's/.*kept as run \([0-9]*\) (with its \([0-9]*\) live run.*/\2/p' tune.txt)
[[ -n $tune_id && $live -ge 1 ]] || fail "tune not kept: $(tail -3 tune.txt)"
"$bin" runs show "$tune_id" >tshow.txt
grep -q "^  live runs " tshow.txt || fail "tune show: $(cat tshow.txt)"
grep -qE "^  p99_ms +[0-9.]+" tshow.txt || fail "tune figures: $(cat tshow.txt)"
[[ $("$bin" runs list --kind tune | grep -c "(in run $tune_id)") == "$live" ]] || fail "tune's live runs"
"$bin" runs export "$tune_id" --format json --out tune.json >/dev/null
python3 -c 'import json; assert "pareto" in json.load(open("tune.json"))' || fail "tune export json"
refuse 2 "is a tune: it keeps its result" runs export "$tune_id" --format csv --out t
before=$("$bin" runs ids | wc -l)
"$bin" runs rm "$tune_id" >/dev/null
[[ $("$bin" runs ids | wc -l) == $((before - live - 1)) ]] || fail "rm of a tune left its live runs"

# Its calibration runs are kept under it too, labelled as calibration.
"$bin" tune --synthetic 500,20 --rate 500 --duration 0.5 --slo-p99-ms 5000 --confirm 1 \
  --calibration-runs 2 --budget-s 60 --space "max_batch_size=1..16,max_wait_ms=0..2" >tune2.txt
tune_id=$(sed -n 's/.*kept as run \([0-9]*\) (with its \([0-9]*\) live run.*/\1/p' tune2.txt)
[[ -n $tune_id ]] || fail "calibrated tune not kept: $(tail -3 tune2.txt)"
"$bin" runs list --kind tune >tlist.txt
[[ $(grep "(in run $tune_id)" tlist.txt | grep -c "calibration, fifo") == 2 ]] \
  || fail "calibration runs under tune $tune_id: $(cat tlist.txt)"
[[ $(grep "(in run $tune_id)" tlist.txt | grep -c "confirming ") -ge 1 ]] \
  || fail "confirmation runs under tune $tune_id: $(cat tlist.txt)"

# Unfit history files: one warning, and bench goes on and succeeds.
echo "not a database" >corrupt.sqlite
"$bin" bench --synthetic 200,20 --duration 0.2 --history corrupt.sqlite >ok.txt 2>warn.txt
grep -q "warning: history corrupt.sqlite is not a Batchscope history" warn.txt \
  || fail "corrupt: $(cat warn.txt)"
grep -q "the history is off for this run" warn.txt || fail "corrupt: history not off"
[[ $(wc -l <warn.txt) == 1 ]] || fail "more than one warning: $(cat warn.txt)"
grep -q "throughput" ok.txt || fail "bench did not run on a corrupt history"
refuse 1 "is not a Batchscope history" runs list --history corrupt.sqlite

if [[ -n $model ]]; then
  # A TorchScript model's file is fingerprinted.
  "$bin" bench --model "$model" --rate 200 --duration 0.3 >m.txt
  id=$(sed -n 's/.*kept as run \([0-9]*\).*/\1/p' m.txt)
  sha=$(sha256sum "$model" | cut -d' ' -f1)
  "$bin" runs show "$id" >m_show.txt
  grep -q "model.sha256 *$sha" m_show.txt || fail "model sha256: $(cat m_show.txt)"
  grep -q "torch.version" m_show.txt || fail "torch version: $(cat m_show.txt)"
  grep -q "model.metadata.max_batch_size" m_show.txt || fail "model metadata: $(cat m_show.txt)"
fi
echo "runs_cli: ok"
