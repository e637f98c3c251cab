#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `batchscope help COMMAND` prints that command's help, as `COMMAND --help`
# does; `help` alone prints the usage; an unknown command is refused by name.
# Usage: help_command.sh BATCHSCOPE
set -euo pipefail
bs=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
for c in profile bench serve runs; do
  want=$("$bs" "$c" --help)
  have=$("$bs" help "$c")
  [ "$want" = "$have" ] || fail "help $c differs from $c --help"
  grep -q "$c" <<<"$have" || fail "help $c does not name $c"
done
[ "$("$bs" help)" = "$("$bs" --help)" ] || fail "help alone is not the usage"
set +e
out=$("$bs" help nope 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] || fail "help nope exited $rc, not 2"
grep -q "unknown command 'nope'" <<<"$out" || fail "help nope does not name it: $out"
echo "ok: help COMMAND"
