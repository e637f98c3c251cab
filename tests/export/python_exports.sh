#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# batchscope export of Python models (tests/export/data/*_handler.py) for
# Triton, TorchServe and Ray Serve through the command: the files and their
# folders, the handler copied verbatim, every generated .py compiled by
# py_compile, the Triton config read back by batchscope import, a handler
# named like a wrapper refused; then each wrapper run by python_wrappers.py
# against stand-ins of the servers' Python APIs (python_fakes/).
# Usage: python_exports.sh BATCHSCOPE WORKDIR
# Exits 77 (skipped) without /usr/bin/python3 and numpy, which Python models need.
set -euo pipefail
bin=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
py=/usr/bin/python3
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "skipped: /usr/bin/python3 with numpy (Debian: python3-numpy) runs Python models"
  exit 77
fi
rm -rf "$dir"
mkdir -p "$dir/handlers"
# Exported from copies: opening a handler imports it, which may leave
# __pycache__ beside it.
cp "$data/toy_handler.py" "$data/ragged_handler.py" "$data/text_handler.py" "$dir/handlers/"
# Loose: preprocess returns lists and arrays of other dtypes, which the
# wrappers convert to the declared ones; postprocess answers numpy values and
# bytes. A row's x[0] picks a fault: 7, 8, 9 in preprocess (0.5 for INT64, a
# shape [3] for [4], text for BOOL); 4, 5, 6 in postprocess (a list, bytes
# that are not UTF-8, an object JSON cannot carry).
cat >"$dir/handlers/loose_handler.py" <<'EOF'
import numpy as np


class Loose:
    """Converts nothing itself: the wrappers must."""

    request_inputs = {"x": ("FP32", [4])}
    inputs = {"x": ("FP32", [4]), "n": ("INT64", [2]), "flag": ("BOOL", [])}
    outputs = {"y": ("FP32", [4]), "n": ("INT64", [2]), "flag": ("BOOL", [])}
    response_outputs = {"y": ("FP32", [4]), "total": ("FP64", []), "n": ("INT64", [2]),
                        "flag": ("BOOL", []), "label": ("BYTES", []), "names": ("BYTES", [])}
    max_batch_size = 16

    def __init__(self):
        self.batches = []

    def preprocess(self, request):
        x = [float(v) for v in request["x"]]
        row = {"x": x, "n": np.array(x[1:3], dtype=np.float64), "flag": int(x[3] > 0)}
        if x[0] == 7:
            row["n"] = np.array([0.5, 1.0])
        elif x[0] == 8:
            row["x"] = x[:3]
        elif x[0] == 9:
            row["flag"] = "yes"
        return row

    def predict(self, inputs):
        x, n, flag = inputs["x"], inputs["n"], inputs["flag"]
        self.batches.append(len(x))
        if (x.dtype, n.dtype, flag.dtype) != (np.float32, np.int64, np.bool_):
            raise TypeError("predict got %s, %s, %s" % (x.dtype, n.dtype, flag.dtype))
        return {"y": x * 2, "n": n + 1, "flag": ~flag}

    def postprocess(self, outputs):
        y, flag = outputs["y"], outputs["flag"][()]
        answer = {"y": y.astype(np.float64), "total": y.astype(np.float64).sum(),
                  "n": outputs["n"], "flag": flag, "label": b"on" if flag else b"off",
                  "names": np.array([b"n", "%d" % outputs["n"][0]], dtype=object)}
        if y[0] == 8:
            return [answer]
        if y[0] == 10:
            answer["label"] = b"\xff"
        elif y[0] == 12:
            answer["names"] = np.array([object()], dtype=object)
        return answer
EOF

opts=(--max-batch-size 8 --max-wait-ms 1.5 --lanes 2 --queue-capacity 64)
for f in triton torchserve rayserve; do
  "$bin" export --format "$f" --model "$dir/handlers/toy_handler.py" --class Toy \
    --model-option scale=2 --model-option bias=0.5 "${opts[@]}" --out "$dir/$f-toy" >/dev/null
  "$bin" export --format "$f" --model "$dir/handlers/ragged_handler.py" "${opts[@]}" \
    --out "$dir/$f-ragged" >/dev/null
  # Requests send text (BYTES, of shape [1] and []) that preprocess turns into
  # what predict takes; postprocess answers text.
  "$bin" export --format "$f" --model "$dir/handlers/text_handler.py" --class Text "${opts[@]}" \
    --out "$dir/$f-text" >/dev/null
  "$bin" export --format "$f" --model "$dir/handlers/text_handler.py" --class TextScalar \
    "${opts[@]}" --out "$dir/$f-textscalar" >/dev/null
  "$bin" export --format "$f" --model "$dir/handlers/loose_handler.py" "${opts[@]}" \
    --out "$dir/$f-loose" >/dev/null
done

# Hooked has preprocess and postprocess, which the wrappers run; Batchscope's
# own engine may refuse to open such a class, so its wrappers are Toy's with
# HANDLER_CLASS changed, the one line in which they differ.
for f in triton torchserve rayserve; do
  cp -r "$dir/$f-toy" "$dir/$f-hooked"
  find "$dir/$f-hooked" -name '*.py' ! -name toy_handler.py -print0 |
    xargs -0 sed -i 's/^HANDLER_CLASS = "Toy"$/HANDLER_CLASS = "Hooked"/'
  test "$(grep -rlx 'HANDLER_CLASS = "Hooked"' "$dir/$f-hooked" | wc -l)" -eq 1
done

# The files each format writes, the handler copied as it is.
t=$dir/triton-toy/toy_handler
test -s "$t/config.pbtxt" && test -s "$t/1/model.py"
cmp "$data/toy_handler.py" "$t/1/toy_handler.py"
cmp "$data/ragged_handler.py" "$dir/triton-ragged/ragged_handler/1/ragged_handler.py"
for f in config.properties model-config.yaml torchserve_handler.py; do
  test -s "$dir/torchserve-toy/$f"
done
cmp "$data/toy_handler.py" "$dir/torchserve-toy/toy_handler.py"
test -s "$dir/rayserve-toy/deployment.py" && test -s "$dir/rayserve-toy/serve_config.yaml"
cmp "$data/toy_handler.py" "$dir/rayserve-toy/toy_handler.py"
grep -q '^backend: "python"$' "$t/config.pbtxt"
grep -q '^HANDLER_CLASS = "Toy"$' "$t/1/model.py"
grep -q '^    "bias": "0.5",$' "$t/1/model.py"
grep -q '^HANDLER_CLASS = ""$' "$dir/triton-ragged/ragged_handler/1/model.py"
grep -q 'allow_ragged_batch: true' "$dir/triton-ragged/ragged_handler/config.pbtxt"
# What requests send and get for Triton; what predict takes and gives for the wrapper.
grep -q 'data_type: TYPE_STRING' "$dir/triton-text/text_handler/config.pbtxt"
if grep -q '"counts"' "$dir/triton-text/text_handler/config.pbtxt"; then
  echo "config.pbtxt names predict's input, not the request's" >&2
  exit 1
fi
grep -q '^    ("text", "object", \[1\]),$' "$dir/triton-text/text_handler/1/model.py"
grep -q '^    ("counts", "float32", \[4\], 0),$' "$dir/triton-text/text_handler/1/model.py"
grep -q '^    ("text", "object", \[\]),$' "$dir/rayserve-textscalar/deployment.py"
grep -q -- '--handler torchserve_handler.py --extra-files toy_handler.py' \
  "$dir/torchserve-toy/model-config.yaml"
grep -q '^batchSize: 8$' "$dir/torchserve-toy/model-config.yaml"
grep -q '^maxBatchDelay: 2$' "$dir/torchserve-toy/model-config.yaml"
grep -q '^    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.0015)$' \
  "$dir/rayserve-toy/deployment.py"

# Every generated Python file compiles, and so do the golden ones (their
# bytecode written into the work folder, not the source tree).
compile() { "$py" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2],
doraise=True)' "$1" "$dir/compiled.pyc"; }
while IFS= read -r -d '' f; do
  compile "$f"
done < <(find "$dir" "$here/golden/python_toy" -name '*.py' ! -path "$dir/handlers/*" -print0 |
  sort -z)

# The Triton configuration reads back to the options it came from.
"$bin" import --from "$t/config.pbtxt" --out "$dir/back.json" 2>"$dir/notes.txt" >/dev/null
grep -q '"max_batch_size": 8' "$dir/back.json"
grep -q '"max_wait_us": 1500' "$dir/back.json"
grep -q '"num_lanes": 2' "$dir/back.json"
grep -q '"queue_capacity": 64' "$dir/back.json"

# A handler named like the wrapper is refused, naming the clash.
mkdir -p "$dir/clash"
cp "$data/ragged_handler.py" "$dir/clash/model.py"
if "$bin" export --format triton --model "$dir/clash/model.py" --max-batch-size 8 \
  --out "$dir/clash-out" >"$dir/clash.txt" 2>&1; then
  echo "a handler named model.py was not refused for Triton" >&2
  exit 1
fi
grep -q "the name of the triton export's own file" "$dir/clash.txt" || { cat "$dir/clash.txt" >&2; exit 1; }

"$py" -B "$here/python_wrappers.py" "$dir" "$data"
