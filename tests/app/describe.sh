#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `describe` as a new user meets it: three models traced here with Debian's
# python3-torch (one input; two inputs of mixed datatypes; a tuple output),
# none with a sidecar. Loading one first says how to make its sidecar;
# describe writes one that bench then serves; a wrong shape prints the
# forward pass's error; a folder that cannot be written gets the sidecar in
# the config folder, where the loader finds it.
# Usage: describe.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/cache" XDG_CONFIG_HOME="$dir/config"
/usr/bin/python3 - "$dir" <<'PY'
import sys
import torch
from torch import nn
torch.manual_seed(7)
out = sys.argv[1]

class UserCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8 * 30 * 30, 10)
    def forward(self, image):
        return self.head(torch.relu(self.conv(image)).flatten(1))

class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 4)
    def forward(self, token_ids, weights):
        return (self.emb(token_ids) * weights.unsqueeze(-1)).sum(1)

class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 3)
    def forward(self, x):
        y = self.lin(x)
        return y, y.argmax(1)

torch.jit.trace(UserCnn().eval(), torch.zeros(1, 3, 32, 32)).save(out + "/user_cnn.pt")
torch.jit.trace(Mixed().eval(), (torch.zeros(1, 12, dtype=torch.long), torch.ones(1, 12))).save(out + "/mixed.pt")
torch.jit.trace(TwoHeads().eval(), torch.zeros(1, 6)).save(out + "/two_heads.pt")
PY

# No sidecar: the error says how to make one, naming forward's arguments.
if "$bin" bench --model "$dir/mixed.pt" --duration 1 --no-history 2>"$dir/none.txt"; then
  echo "bench ran a model without a sidecar" >&2; exit 1
fi
grep -q "make one with: batchscope describe --model $dir/mixed.pt --input token_ids:DTYPE:SHAPE --input weights:DTYPE:SHAPE" "$dir/none.txt"

# Not a terminal and no --input: each argument is named.
if "$bin" describe --model "$dir/mixed.pt" </dev/null 2>"$dir/ask.txt"; then exit 1; fi
grep -q "forward takes 'token_ids', 'weights' with no shape given" "$dir/ask.txt"

# A wrong shape: the forward pass's own message.
if "$bin" describe --model "$dir/user_cnn.pt" --input image:FP32:3,28,28 2>"$dir/wrong.txt"; then exit 1; fi
grep -q "forward pass on zeros (image FP32 \[1, 3, 28, 28\]) failed: RuntimeError: mat1 and mat2 shapes cannot be multiplied" "$dir/wrong.txt"
test ! -e "$dir/user_cnn.json"

"$bin" describe --model "$dir/user_cnn.pt" --input image:FP32:3,32,32 >"$dir/d1.txt"
"$bin" describe --model "$dir/mixed.pt" --input weights:FP32:12 --input token_ids:INT64:12 \
  --max-batch-size 16 >"$dir/d2.txt"
"$bin" describe --model "$dir/two_heads.pt" --input x:FP32:6 >"$dir/d3.txt"
grep -q "wrote $dir/user_cnn.json" "$dir/d1.txt"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
cnn, mixed, heads = (json.load(open(f"{d}/{n}.json")) for n in ("user_cnn", "mixed", "two_heads"))
assert cnn["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}], cnn
assert cnn["outputs"] == [{"name": "output", "datatype": "FP32", "shape": [-1, 10]}], cnn
assert [i["name"] for i in mixed["inputs"]] == ["token_ids", "weights"], mixed
assert [i["datatype"] for i in mixed["inputs"]] == ["INT64", "FP32"], mixed
assert mixed["max_batch_size"] == 16 and mixed["outputs"][0]["shape"] == [-1, 4], mixed
assert heads["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [-1, 3]},
                            {"name": "output_1", "datatype": "INT64", "shape": [-1]}], heads
PY
# An existing sidecar is kept unless --force.
if "$bin" describe --model "$dir/two_heads.pt" --input x:FP32:6 2>"$dir/again.txt"; then exit 1; fi
grep -q "exists already; --force replaces it" "$dir/again.txt"

# Each one serves: every request answered.
for m in user_cnn mixed two_heads; do
  "$bin" bench --model "$dir/$m.pt" --duration 1 --rate 100 --no-history >"$dir/bench_$m.txt"
  grep -Eq "ok [1-9][0-9]* +rejected 0 +timed out 0 +errors 0" "$dir/bench_$m.txt"
done

# A folder its user cannot write: the sidecar goes to that user's config folder.
ro="$dir/readonly"
mkdir -p "$ro" "$dir/home"
cp "$dir/two_heads.pt" "$ro/"
chmod 555 "$ro"
chown nobody "$dir/home"
chmod 755 "$dir"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups env -u XDG_CONFIG_HOME HOME="$dir/home" "$@"; }
if [ "$(id -u)" = 0 ]; then
  as_nobody "$bin" describe --model "$ro/two_heads.pt" --input x:FP32:6 >"$dir/ro.txt"
  want="$dir/home/.config/batchscope/sidecars${ro}/two_heads.json"
  grep -q "wrote $want" "$dir/ro.txt"
  test -f "$want"
  test ! -e "$ro/two_heads.json"
  as_nobody "$bin" bench --model "$ro/two_heads.pt" --duration 1 --rate 50 --no-history >"$dir/ro_bench.txt"
  grep -Eq "errors 0" "$dir/ro_bench.txt"
else
  echo "describe.sh: not root, the read-only folder case is skipped"
fi
echo "describe: ok"
