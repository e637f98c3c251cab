#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every source file of the project names its licence (scripts/spdx --check),
# and the check fails on a scratch tree holding a source file without the
# line, naming it; scripts/spdx then adds the line after a shebang, leaves
# data alone, and the check passes.
# Usage: spdx_test.sh PROJECT_ROOT SCRATCH_DIR
set -euo pipefail
root=$1
scratch=$2
spdx=$root/scripts/spdx
fail() { echo "FAIL: $*" >&2; exit 1; }

"$spdx" --check --root "$root" || fail "a source file of the project has no SPDX line"

rm -rf "$scratch" && mkdir -p "$scratch/core" "$scratch/tests/export/golden" "$scratch/scripts"
printf '// SPDX-License-Identifier: GPL-3.0-or-later\nint a;\n' >"$scratch/core/good.cpp"
printf '#pragma once\nint b;\n' >"$scratch/core/bad.h"
printf '#!/usr/bin/env bash\necho hi\n' >"$scratch/scripts/tool"
chmod +x "$scratch/scripts/tool"
printf 'print(1)\n' >"$scratch/tests/export/golden/deployment.py"
if out=$("$spdx" --check --root "$scratch" 2>&1); then fail "the check passed on files without the line"; fi
grep -q "core/bad.h" <<<"$out" || fail "the report does not name core/bad.h: $out"
grep -q "scripts/tool" <<<"$out" || fail "the report does not name scripts/tool: $out"
grep -q "good.cpp\|golden" <<<"$out" && fail "the report names a file that needs no line: $out"

"$spdx" --root "$scratch" >/dev/null
"$spdx" --check --root "$scratch" || fail "the check fails after scripts/spdx added the lines"
[ "$(sed -n 2p "$scratch/scripts/tool")" = "# SPDX-License-Identifier: GPL-3.0-or-later" ] ||
  fail "the line is not second, after the shebang: $(head -3 "$scratch/scripts/tool")"
[ "$(head -n 1 "$scratch/core/bad.h")" = "// SPDX-License-Identifier: GPL-3.0-or-later" ] ||
  fail "the header's first line is not the SPDX line"
[ "$(cat "$scratch/tests/export/golden/deployment.py")" = "print(1)" ] || fail "a golden file was changed"
[ -x "$scratch/scripts/tool" ] || fail "the script lost its executable bit"
echo "spdx_test: ok"
