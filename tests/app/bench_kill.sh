#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# A bench keeps its run as it goes: killed with SIGKILL (tensor and
# generative), the reopened history holds the run, unfinished, with its
# requests up to about the last second and figures rebuilt from them;
# stopped with SIGINT or SIGTERM, the run is finished, marked as stopped by
# the user, and lasts as long as it ran. A 2 s run's times are 2 s apart.
# Usage: bench_kill.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache"
cd "$dir"
export BATCHSCOPE_HISTORY=$dir/history.sqlite

fail() {
  echo "bench_kill: $*" >&2
  exit 1
}

# start NAME ARGS...: a bench in the background, its pid in $pid, once its
# run is in the history (the first hand-over comes as the traffic starts).
start() {
  local name=$1
  shift
  "$bin" bench "$@" >"$name.out" 2>"$name.err" &
  pid=$!
  for _ in $(seq 1 300); do
    if "$bin" runs list 2>/dev/null | grep -q "unfinished"; then return; fi
    kill -0 "$pid" 2>/dev/null || fail "$name ended early: $(cat "$name.out" "$name.err")"
    sleep 0.1
  done
  fail "$name: no unfinished run after 30 s: $(cat "$name.out" "$name.err")"
}

# newest: the id of the newest run.
newest() { "$bin" runs list | awk 'NR == 2 { print $1 }'; }

# epoch TEXT: "2026-11-30 21:42:08.994" (UTC) in seconds.
epoch() { date -u -d "$1 UTC" +%s.%N; }

# last_sent ID COLUMN SCALE: the run's latest intended send, in seconds
# since the epoch.
last_sent() {
  local id=$1 column=$2 scale=$3
  "$bin" runs show "$id" >show.txt
  local started
  started=$(sed -n 's/^  started   \(.*\) UTC$/\1/p' show.txt)
  "$bin" runs export "$id" --format csv --out "run$id" >/dev/null
  awk -F, -v col="$column" -v scale="$scale" -v t0="$(epoch "$started")" '
    NR == 1 { for (i = 1; i <= NF; ++i) if ($i == col) c = i; next }
    $c + 0 > m { m = $c + 0 }
    END { printf "%.3f\n", t0 + m / scale }' "run${id}_requests.csv"
}

# killed NAME COLUMN SCALE ARGS...: SIGKILL 3 s into the run; the run stays
# unfinished with what was sent until about a second before the kill.
killed() {
  local name=$1 column=$2 scale=$3
  shift 3
  start "$name" "$@"
  sleep 3
  local at
  at=$(date -u +%s.%N)
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null || true
  local id
  id=$(newest)
  "$bin" runs list >list.txt
  grep -E "^ +$id .*\[unfinished\]" list.txt || fail "$name: run $id not unfinished: $(cat list.txt)"
  # The figures were rebuilt from the records: a throughput, not "-".
  awk -v id="$id" '$1 == id && $6 + 0 > 0 { ok = 1 } END { exit !ok }' list.txt ||
    fail "$name: no figures for run $id: $(cat list.txt)"
  local last
  last=$(last_sent "$id" "$column" "$scale")
  grep -q "finished  no" show.txt || fail "$name: show: $(cat show.txt)"
  awk -v last="$last" -v at="$at" 'BEGIN { exit !(at - last < 1.5) }' ||
    fail "$name: the last kept request was sent at $last, the kill came at $at"
  echo "$name: killed at $at, last kept request sent at $last"
}

# stopped NAME SIGNAL ARGS...: the signal 2 s in; the run is finished and
# marked as stopped by the user, lasting about as long as it ran.
stopped() {
  local name=$1 sig=$2
  shift 2
  start "$name" "$@"
  sleep 2
  kill "-$sig" "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [[ $rc == 0 ]] || fail "$name: exit $rc after SIG$sig: $(cat "$name.out" "$name.err")"
  grep -q "stopped by the user (SIG$sig)" "$name.out" || fail "$name: $(cat "$name.out")"
  local id
  id=$(newest)
  "$bin" runs list >list.txt
  grep -E "^ +$id .*\[stopped by the user\]" list.txt || fail "$name: list: $(cat list.txt)"
  "$bin" runs show "$id" >show.txt
  grep -q "stopped   by the user (SIG$sig) after" show.txt || fail "$name: show: $(cat show.txt)"
  local duration
  duration=$(sed -n 's/^  duration  \([0-9.]*\) s$/\1/p' show.txt)
  awk -v d="$duration" 'BEGIN { exit !(d > 1 && d < 10) }' || fail "$name: duration $duration"
}

killed tensor intended_us 1e6 --synthetic 500,20 --rate 1000 --duration 60
killed generative intended_ms 1e3 --synthetic-lm 2000,200 --rate 20 --duration 60
stopped tensor_int INT --synthetic 500,20 --rate 1000 --duration 60
stopped generative_term TERM --synthetic-lm 2000,200 --rate 20 --duration 60 --target self-http

# A 2 s run: its times are 2 s apart, to the millisecond.
"$bin" bench --synthetic 500,20 --rate 500 --duration 2 >two.out
"$bin" runs show "$(newest)" >show.txt
duration=$(sed -n 's/^  duration  \([0-9.]*\) s$/\1/p' show.txt)
[[ $duration == 2 || $duration == 2.000 ]] || fail "a 2 s run lasted $duration s: $(cat show.txt)"
echo "bench_kill: ok"
