# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python examples in models/python, served as a user would serve them:
mlp.py answers what mlp.pt answers for the same features (eager PyTorch
against TorchScript, the same weights), and iris_sklearn.py names the
species of two flowers from the iris data.

Usage: python_examples.py BATCHSCOPE MODELS_DIR
"""

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request

BIN, MODELS = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def start(model):
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--no-history", "--model", model],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        raise SystemExit("serve %s did not start: %r" % (model, line))
    return p, "http://127.0.0.1:%s" % m.group(1)


def infer(base, name, inputs):
    req = urllib.request.Request(base + "/v2/models/%s/infer" % name,
                                 data=json.dumps({"inputs": inputs}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return {o["name"]: o["data"] for o in json.loads(r.read())["outputs"]}


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(30)


features = [((i * 37) % 101) / 50.0 - 1.0 for i in range(2 * 512)]
rows = [{"name": "features", "datatype": "FP32", "shape": [2, 512], "data": features}]
answers = {}
for model in ("mlp.pt", os.path.join("python", "mlp.py")):
    p, base = start(os.path.join(MODELS, model))
    answers[model] = infer(base, "mlp", rows)["logits"]
    stop(p)
eager, script = answers[os.path.join("python", "mlp.py")], answers["mlp.pt"]
check(len(eager) == 32 and len(script) == 32, "two rows of 16 logits each")
check(max(abs(a - b) for a, b in zip(eager, script)) < 1e-5,
      "mlp.py answers as mlp.pt: %s against %s" % (eager[:4], script[:4]))

p, base = start(os.path.join(MODELS, "python", "iris_sklearn.py"))
flowers = [5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3]  # a setosa, a virginica
out = infer(base, "iris_sklearn",
            [{"name": "measurements", "datatype": "FP32", "shape": [2, 4], "data": flowers}])
check(out["species"] == [0, 2], "iris species: %s" % out)
check(abs(sum(out["probabilities"][:3]) - 1) < 1e-4, "probabilities sum to 1: %s" % out)
stop(p)
sys.exit(1 if failures else 0)
