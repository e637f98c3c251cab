#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `cmake --install` into a scratch root (DESTDIR), then the installed
# batchscope run from an empty folder elsewhere: --version names the models
# under its own prefix; profile and a short bench load a shipped model by its
# bare name; a shipped Python model runs in the installed worker module; the manual page renders without a warning and carries every
# command's flags; the desktop and AppStream files validate; the icons are in
# place; and the bash completion completes commands, flags, their values and
# the installed models by name.
# Usage: install_test.sh BUILD_DIR WORKDIR
set -euo pipefail
unset BATCHSCOPE_MODELS  # the installed prefix is under test
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work/elsewhere"
root=$work/root
DESTDIR=$root cmake --install "$build" --prefix /usr >"$work/install.log"
bin=$root/usr/bin/batchscope
fail() { echo "install_test: $*" >&2; exit 1; }
cd "$work/elsewhere"

"$bin" --version >version.txt
grep -qxF "Models: $root/usr/share/batchscope/models" version.txt ||
  fail "--version does not name the installed models: $(cat version.txt)"

"$bin" profile --model mlp --max-batch 4 --seconds-per-point 0.02 >profile.txt ||
  fail "profile failed: $(cat profile.txt)"
# Loaded by its bare name and measured; whether the sizes settle depends on how
# busy the machine is, so the fit's verdict is not asserted here.
grep -q "^Model mlp on cpu" profile.txt && grep -q "^fit: t(b) = " profile.txt ||
  fail "profile printed: $(cat profile.txt)"
[[ ! -e models ]] || fail "the empty folder has models/"

"$bin" bench --model models/linear_128x64.pt --duration 1 --rate 200 --json bench.json >bench.txt
python3 - bench.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] > 100 and d["ok"] == d["sent"], d
PY

# A Python model served by the installed worker module (both of its files).
"$bin" bench --model "$root/usr/share/batchscope/models/python/iris_sklearn.py" --duration 1 \
  --rate 50 --no-history --json iris.json >iris.txt 2>&1 || fail "a Python model's bench: $(cat iris.txt)"
python3 - iris.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] > 20 and d["ok"] == d["sent"], d
PY

# The manual page: every command's section and flags, and no groff warning.
man_page=$root/usr/share/man/man1/batchscope.1.gz
LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l "$man_page" >man.txt 2>man_err.txt
[[ ! -s man_err.txt ]] || fail "man warns: $(cat man_err.txt)"
for want in "batchscope serve" "batchscope tune" "--max-wait-ms" "--slo-p99-ms" "BATCHSCOPE_MODELS"; do
  grep -qF -- "$want" man.txt || fail "the manual page lacks '$want'"
done
# Each command's section is its --help, word for word.
for cmd in gui demo profile serve bench tune export import; do
  "$bin" "$cmd" --help >help.txt
  zcat "$man_page" | awk -v want=".SS \"batchscope $cmd\"" '$0 == want {on = 1; getline; next}
       on && $0 == ".fi" {on = 0} on {print}' | sed -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' >section.txt
  diff -u help.txt section.txt >/dev/null || fail "the manual's '$cmd' differs from its --help:
$(diff -u help.txt section.txt | head -20)"
done

# Desktop integration.
desktop-file-validate "$root/usr/share/applications/org.batchscope.batchscope.desktop"
metainfo=$root/usr/share/metainfo/org.batchscope.batchscope.metainfo.xml
# Pedantic hints fail too; --no-net: the links' host is not reached from a test.
out=$(appstreamcli validate --pedantic --no-net "$metainfo" 2>&1) || true
grep -q "Validation was successful" <<<"$out" || fail "appstreamcli validate --pedantic: $out"
grep -q "<project_license>GPL-3.0-or-later</project_license>" "$metainfo" || fail "the metainfo names no licence"
version=$("$bin" --version | sed -n '1s/^batchscope \([0-9.]*\).*/\1/p')
grep -q "<release version=\"$version\" date=" "$metainfo" || fail "the metainfo has no release $version"
for size in 16 32 48 64 128 256; do
  [[ -s $root/usr/share/icons/hicolor/${size}x$size/apps/batchscope.png ]] || fail "no ${size}px icon"
done
[[ -s $root/usr/share/icons/hicolor/scalable/apps/batchscope.svg ]] || fail "no SVG icon"

# Bash completion: commands, a command's flags, a flag's values, file and model names.
complete_words() {
  PATH=$root/usr/bin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
           _batchscope; echo "${COMPREPLY[*]}"' sh \
    "$root/usr/share/bash-completion/completions/batchscope" "$@"
}
[[ $(complete_words batchscope t) == "tune" ]] || fail "completing 't': $(complete_words batchscope t)"
[[ $(complete_words batchscope bench --max-w) == "--max-wait-ms" ]] || fail "completing --max-w"
[[ $(complete_words batchscope serve --strategy "") == "fifo adaptive" ]] || fail "completing --strategy"
[[ $(complete_words batchscope bench --pattern st) == "step" ]] || fail "completing --pattern st"
# After --model: files here, and the installed models by name.
[[ $(complete_words batchscope serve --model ml) == "mlp" ]] || fail "completing --model ml"
touch trace_one.csv
[[ $(complete_words batchscope bench --trace trace_) == "trace_one.csv" ]] || fail "completing a file"
# Run ids come from the history: a run kept by bench is offered after `runs show`.
export BATCHSCOPE_HISTORY=$PWD/completion_history.sqlite
PATH=$root/usr/bin:$PATH batchscope bench --synthetic 100,10 --duration 0.2 --rate 200 >/dev/null \
  || fail "bench did not run"
[[ $(complete_words batchscope runs sh) == "show" ]] || fail "completing runs sh"
[[ $(complete_words batchscope runs show "") == "1" ]] || fail "completing a run id: $(complete_words batchscope runs show "")"
echo "install_test: installed tree works from $PWD"
