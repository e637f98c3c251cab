#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope report: two kept bench runs as one self-contained HTML page,
# which fetches nothing, and which Chromium (headless) renders: its DOM has
# the four charts (latency, throughput, batch sizes, each run's stages) and
# the tables, and its screenshot is far from blank.
# Two runs of a Python model with preprocess (models/python/sentiment.py,
# where /usr/bin/python3 has numpy) say what ran them: the class, the
# interpreter and the workers' threads, not LibTorch's, and each run's pool.
# Usage: report_test.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
models=$(cd "$(dirname "$0")/../../models" && pwd)
rm -rf "$dir"
mkdir -p "$dir"
# Kept costs go to a cache of this run's own, not the user's.
export XDG_CACHE_HOME="$dir/cache"
cd "$dir"
export BATCHSCOPE_HISTORY=$dir/history.sqlite
fail() {
  echo "report_test: $*" >&2
  exit 1
}

"$bin" bench --synthetic 300,20 --rate 500 --duration 1 --max-batch-size 4 >/dev/null
"$bin" bench --synthetic 300,20 --rate 500 --duration 1 --max-batch-size 16 >/dev/null
"$bin" report 1 2 --out report.html --title "batch 4 against 16" >out.txt
grep -q "wrote report.html" out.txt || fail "$(cat out.txt)"

# Self-contained: no script, no stylesheet or image fetched, no link out.
! grep -qiE "<script|<link|src=|url\(|@import" report.html || fail "the page would fetch something"
[[ $(grep -o "<svg" report.html | wc -l) == 4 ]] || fail "not four charts"
grep -q "options.max_batch_size\|max_batch_size=4" report.html || fail "no options"
grep -q 'class="diff"' report.html || fail "the differing options are not marked"
# The page names the build that wrote it, as --version does.
label=$("$bin" --version | sed -n '1s/^batchscope //p')
grep -qF "Written by Batchscope $label, " report.html || fail "the page does not name Batchscope $label"

# Rendered by a real browser.
chrome=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$dir/chrome"
        --window-size=1300,1500)
timeout 120 "${chrome[@]}" --dump-dom "file://$dir/report.html" >dom.html 2>chrome.log \
  || fail "chromium could not open the report: $(tail -3 chrome.log)"
grep -q "Latency over the run" dom.html || fail "the rendered page lacks the latency chart"
grep -q "What each ran on" dom.html || fail "the rendered page lacks the context table"
grep -q "Where the time went" dom.html || fail "the rendered page lacks the stages' chart"
grep -q "<title>model: mean " dom.html || fail "the stages' chart lacks the model's time"
timeout 120 "${chrome[@]}" --screenshot="$dir/report.png" "file://$dir/report.html" 2>>chrome.log \
  || fail "no screenshot: $(tail -3 chrome.log)"
echo '<!DOCTYPE html><html><body></body></html>' >blank.html
timeout 120 "${chrome[@]}" --screenshot="$dir/blank.png" "file://$dir/blank.html" 2>>chrome.log
report=$(stat -c %s report.png)
blank=$(stat -c %s blank.png)
(( report > 10 * blank )) || fail "the screenshot is near blank ($report bytes against $blank for a blank page)"

# A generation run beside a tensor run: its TTFT and ITL over time are drawn.
"$bin" bench --synthetic-lm 2000,50 --rate 10 --duration 2 >/dev/null
"$bin" report 1 3 --out mixed.html >/dev/null
[[ $(grep -o "<svg" mixed.html | wc -l) == 6 ]] || fail "not six charts with a generation run"
timeout 120 "${chrome[@]}" --dump-dom "file://$dir/mixed.html" >mixed_dom.html 2>>chrome.log
grep -q "Time to first token" mixed_dom.html || fail "no TTFT chart rendered"
grep -q "ttft_p99_ms" mixed_dom.html || fail "no TTFT figures"
timeout 120 "${chrome[@]}" --screenshot="$dir/mixed.png" "file://$dir/mixed.html" 2>>chrome.log

# A Python model with preprocess, its pool at the default (1) and at 2: the
# options row names the pool in both; the context is the class's and its
# interpreter's, with no LibTorch rows, which did not run it.
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  for pool in 1 2; do
    "$bin" bench --model "$models/python/sentiment.py" --rate 200 --duration 1 \
      --preprocess-workers "$pool" --lanes 2 >/dev/null
  done
  "$bin" report 4 5 --out python.html >/dev/null
  timeout 120 "${chrome[@]}" --dump-dom "file://$dir/python.html" >python_dom.html 2>>chrome.log \
    || fail "chromium could not open the Python report: $(tail -3 chrome.log)"
  for want in "num_lanes=2 preprocess_workers=1" "num_lanes=2 preprocess_workers=2" \
              "<td>python.class</td>" "<td>Sentiment</td>" "<td>python.interpreter</td>" \
              "<td>/usr/bin/python3</td>" "<td>python.numpy</td>" "<td>python.preprocess</td>" \
              "<td>python.worker_threads</td>" ">preprocess wait</text>" \
              ">postprocess</text>"; do
    grep -qF "$want" python_dom.html || fail "the Python report lacks '$want'"
  done
  ! grep -q "<td>torch\." python_dom.html || fail "the Python report shows LibTorch's facts"
  grep -q '<td class="diff">strategy=fifo' python_dom.html || fail "the pools' sizes are not marked"
  timeout 120 "${chrome[@]}" --screenshot="$dir/python.png" "file://$dir/python.html" \
    2>>chrome.log || fail "no screenshot of the Python report"
else
  echo "report_test: no Python model (/usr/bin/python3 with numpy runs one)"
fi

# Refusals.
rc=0
"$bin" report 99 --out x.html 2>err.txt || rc=$?
[[ $rc == 2 ]] && grep -q "no run 99" err.txt || fail "unknown id: $rc $(cat err.txt)"
rc=0
"$bin" report 1 2>err.txt || rc=$?
[[ $rc == 2 ]] && grep -q -- "--out FILE.html is required" err.txt || fail "no --out: $(cat err.txt)"
echo "report_test: ok ($report bytes rendered)"
