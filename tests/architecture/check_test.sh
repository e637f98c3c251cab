#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# scripts/check-architecture passes on the project, and fails, naming the file,
# the include and the arrow, on a scratch copy given one forbidden thing at a
# time: an include that runs up, an outside library a room may not use, a
# link that runs up, a header named by a bare file name, and a file in no
# room. The picture in docs/ draws exactly the table's arrows.
# Usage: check_test.sh PROJECT_ROOT SCRATCH_DIR
set -euo pipefail
root=$1
scratch=$2
check=$root/scripts/check-architecture
fail() { echo "FAIL: $*" >&2; exit 1; }

"$check" --root "$root" || fail "the check fails on the project itself"

fresh() {
  rm -rf "$scratch" && mkdir -p "$scratch/docs"
  cp -r "$root/core" "$root/ui" "$root/app" "$scratch/"
  cp "$root/docs/architecture.md" "$scratch/docs/"
}
# expect_finding WHAT PATTERN: the check fails on the scratch tree and its
# report matches PATTERN.
expect_finding() {
  local out
  if out=$("$check" --root "$scratch" 2>&1); then fail "$1: the check passed"; fi
  grep -qE -- "$2" <<<"$out" || fail "$1: the report does not say /$2/: $out"
  echo "ok: $1"
}

fresh
"$check" --root "$scratch" || fail "the check fails on an unchanged copy"

fresh  # runs (below) reaching up into tuning (above)
sed -i '0,/^#include "runs\/records.h"/s//#include "runs\/records.h"\n#include "tuning\/predictor.h"/' \
  "$scratch/core/runs/metrics.h"
grep -q '"tuning/predictor.h"' "$scratch/core/runs/metrics.h" || fail "could not plant the include"
expect_finding "an include that runs up" \
  'core/runs/metrics.h:[0-9]+: #include "tuning/predictor.h": forbidden arrow core/runs -> core/tuning'

fresh  # a window room reaching into a sibling it may not use
echo '#include "ui/workbench/model_panel.h"' >>"$scratch/ui/tuner/tune_plot.cpp"
expect_finding "a sibling room" 'ui/tuner/tune_plot.cpp:[0-9]+: .*forbidden arrow ui/tuner -> ui/workbench'

fresh  # Qt below http
echo '#include <QString>' >>"$scratch/core/batching/strategy.cpp"
expect_finding "Qt in the batching engine" 'core/batching/strategy.cpp:[0-9]+: #include <QString>: core/batching may not use qt'

fresh  # the transport reaching into the routes and their JSON
echo '#include "api/infer_json.h"' >>"$scratch/core/http/http_server.cpp"
expect_finding "transport into the API" 'core/http/http_server.cpp:[0-9]+: #include "api/infer_json.h": forbidden arrow core/http -> core/api'

fresh  # LibTorch outside torch
echo '#include <torch/script.h>' >>"$scratch/ui/common/picture.cpp"
expect_finding "LibTorch in the window" 'ui/common/picture.cpp:[0-9]+: #include <torch/script.h>: ui/common may not use torch'

fresh  # a link that runs up
sed -i 's/target_link_libraries(batchscope_generation PUBLIC batchscope_runs)/target_link_libraries(batchscope_generation PUBLIC batchscope_runs batchscope_api)/' \
  "$scratch/core/generation/CMakeLists.txt"
expect_finding "a link that runs up" \
  'core/generation/CMakeLists.txt: batchscope_generation links batchscope_api: forbidden arrow core/generation -> core/api'

fresh  # a project header in angle brackets would escape the include check
echo '#include <tuning/predictor.h>' >>"$scratch/core/runs/histogram.cpp"
expect_finding "a project header in angle brackets" \
  'core/runs/histogram.cpp:[0-9]+: #include <tuning/predictor.h>: a project header in angle brackets'

fresh  # a lowercase Qt header below http
echo '#include <qglobal.h>' >>"$scratch/core/common/clock.cpp"
expect_finding "a lowercase Qt header" 'core/common/clock.cpp:[0-9]+: #include <qglobal.h>: core/common may not use qt'

fresh  # a link that runs up, written in another room's CMake file
echo 'target_link_libraries(batchscope_runs PUBLIC batchscope_tuning)' >>"$scratch/core/CMakeLists.txt"
expect_finding "a link written elsewhere" \
  'core/CMakeLists.txt: batchscope_runs links batchscope_tuning: forbidden arrow core/runs -> core/tuning'

fresh  # an outside library linked where it may not be used
echo 'target_link_libraries(batchscope_batching PUBLIC Qt6::Core)' >>"$scratch/core/batching/CMakeLists.txt"
expect_finding "Qt linked into the batching engine" \
  'core/batching/CMakeLists.txt: batchscope_batching links Qt6::Core: core/batching may not use qt'

fresh  # an include inside a block comment is no include
printf '/*\n#include "tuning/predictor.h"\n*/\n' >>"$scratch/core/runs/metrics.cpp"
"$check" --root "$scratch" || fail "an include inside a block comment was reported"
echo "ok: an include inside a block comment is not one"

fresh  # a bare file name hides the room it reaches into
echo '#include "engine.h"' >>"$scratch/core/traffic/arrivals.cpp"
expect_finding "a bare header name" 'core/traffic/arrivals.cpp:[0-9]+: #include "engine.h": names no header by its room path'

fresh  # a folder that is no room
mkdir -p "$scratch/core/stray" && echo '// nothing' >"$scratch/core/stray/stray.cpp"
expect_finding "a file in no room" 'core/stray/stray.cpp: lies in no room'

# The picture's arrows are the table's arrows.
picture=$root/docs/architecture.svg
[ -f "$picture" ] || fail "docs/architecture.svg is missing (scripts/architecture-picture)"
want=$("$check" --root "$root" --dot | sed -nE 's/^  "([^"]+)" -> "([^"]+)";$/\1->\2/p' | sort)
have=$(sed -nE 's/.*<title>([^<]+)&#45;&gt;([^<]+)<\/title>.*/\1->\2/p' "$picture" | sort)
[ -n "$want" ] || fail "the table gives no arrows"
[ "$want" = "$have" ] || fail "docs/architecture.svg is out of date (scripts/architecture-picture):
table:   $(echo $want)
picture: $(echo $have)"
echo "ok: the picture draws the table's $(wc -l <<<"$want") arrows"
