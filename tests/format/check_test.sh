#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# scripts/check-format passes on the project, and fails on a scratch copy
# given one line clang-format would write otherwise, naming its file.
# Usage: check_test.sh PROJECT_ROOT SCRATCH_DIR
set -euo pipefail
root=$1
scratch=$2
check=$root/scripts/check-format
fail() { echo "FAIL: $*" >&2; exit 1; }

"$check" --root "$root" || fail "the check fails on the project itself"

rm -rf "$scratch" && mkdir -p "$scratch/core/common"
cp "$root/.clang-format" "$scratch/"
cp "$root/core/common/status.h" "$root/core/common/clock.h" "$scratch/core/common/"
"$check" --root "$scratch" >/dev/null || fail "the check fails on two untouched files"

echo 'inline int planted_misformat (int x){return x*2;}' >>"$scratch/core/common/status.h"
if out=$("$check" --root "$scratch" 2>&1); then fail "a mis-formatted line passed"; fi
grep -qE '^core/common/status\.h:[0-9]+: not as clang-format writes it' <<<"$out" ||
  fail "the report does not name the file: $out"
grep -q 'clock.h' <<<"$out" && fail "the report names an untouched file: $out"
echo "ok: a mis-formatted line fails the check, naming its file"
