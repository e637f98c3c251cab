#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every golden config.pbtxt (tests/export/golden/**/config.pbtxt: the PyTorch
# backend's, the tensorrtllm one and a Python model's) is parsed by protoc
# against data/model_config_subset.proto, the fields the exports write as
# Triton's model configuration documentation declares them, encoded and
# decoded back; a field the subset lacks is refused, so the check bites.
# Triton's own model_config.proto is not packaged in Debian.
# Usage: pbtxt_protoc.sh WORKDIR
# Exits 77 (skipped) without protoc (Debian: protobuf-compiler).
set -euo pipefail
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
protoc=$(command -v protoc || true)
if [ -z "$protoc" ]; then
  echo "skipped: protoc is not installed (Debian: protobuf-compiler)"
  exit 77
fi
rm -rf "$dir"
mkdir -p "$dir"
proto=(--proto_path="$here/data" model_config_subset.proto)
type=batchscope.triton.ModelConfig
count=0
while IFS= read -r -d '' f; do
  if ! "$protoc" "${proto[@]}" --encode="$type" <"$f" >"$dir/config.bin" 2>"$dir/error.txt"; then
    echo "protoc refused $f:" >&2
    cat "$dir/error.txt" >&2
    exit 1
  fi
  "$protoc" "${proto[@]}" --decode="$type" <"$dir/config.bin" >"$dir/decoded.txt"
  grep -q '^max_batch_size: ' "$dir/decoded.txt"
  count=$((count + 1))
done < <(find "$here/golden" -name config.pbtxt -print0 | sort -z)
[ "$count" -ge 6 ] || { echo "only $count config.pbtxt files found" >&2; exit 1; }
python=$here/golden/python_toy/triton/toy_handler/config.pbtxt
"$protoc" "${proto[@]}" --encode="$type" <"$python" |
  "$protoc" "${proto[@]}" --decode="$type" >"$dir/python.txt"
grep -q '^backend: "python"$' "$dir/python.txt"
grep -q '^  kind: KIND_CPU$' "$dir/python.txt"
grep -q '^  data_type: TYPE_FP64$' "$dir/python.txt"
printf 'backend: "python"\nmax_batch_sise: 8\n' >"$dir/typo.pbtxt"
if "$protoc" "${proto[@]}" --encode="$type" <"$dir/typo.pbtxt" >/dev/null 2>&1; then
  echo "protoc took a misspelt field" >&2
  exit 1
fi
echo "protoc reads all $count golden config.pbtxt files"
