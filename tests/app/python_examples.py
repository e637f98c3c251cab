# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python examples in models/python, served as a user would serve them:
mlp.py answers what mlp.pt answers for the same features (eager PyTorch
against TorchScript, the same weights), iris_sklearn.py names the species
of two flowers from the iris data, digits.py reads handwritten digits from
PNG and JPEG files (raw and base64) through its preprocess pool and
without one, and sentiment.py names the sentiment of texts it tokenizes in
preprocess; a request whose image cannot be read is answered 422 alone.

Usage: python_examples.py BATCHSCOPE MODELS_DIR
"""

import json
import os
import signal
import subprocess
import sys
import urllib.request

from serve_lines import env_without_kept_cost, listening

BIN, MODELS = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


ENV = env_without_kept_cost("python_examples_cache_")


def start(model, *flags):
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--no-history", "--model", model, *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV)
    line, m = listening(p)
    if not m:
        p.kill()
        raise SystemExit("serve %s did not start: %r" % (model, line))
    return p, "http://127.0.0.1:%s" % m.group(1)


def infer(base, name, inputs):
    req = urllib.request.Request(base + "/v2/models/%s/infer" % name,
                                 data=json.dumps({"inputs": inputs}).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return {o["name"]: o["data"] for o in json.loads(r.read())["outputs"]}


def refused(base, name, inputs):
    """The status and error of a request that must fail."""
    try:
        infer(base, name, inputs)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()).get("error", "")
    return 200, ""


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

# Handwritten digits as image files: the scikit-learn digits themselves,
# drawn dark on light at 96 x 96 pixels (PNG) and 100 x 100 (JPEG).
sys.dont_write_bytecode = True  # no __pycache__ beside the helper in the source tree
from digit_images import digit_images  # noqa: E402  (tests/app/digit_images.py)

drawn = digit_images()
images = [b64 for b64, _ in drawn]
expected = [digit for _, digit in drawn]
for pool in ("2", "0"):
    p, base = start(os.path.join(MODELS, "python", "digits.py"), "--preprocess-workers", pool)
    out = infer(base, "digits", [{"name": "image", "datatype": "BYTES", "shape": [len(images)],
                                  "data": images}])
    check(out["digit"] == expected, "digits (pool %s): %s, expected %s" % (pool, out, expected))
    # The digit read is the most probable of ten.
    check(all(0.1 < q <= 1 for q in out["probability"]), "digit probabilities: %s" % out)
    status, error = refused(base, "digits", [{"name": "image", "datatype": "BYTES",
                                              "shape": [1], "data": ["aGVsbG8="]}])
    check(status == 422 and "cannot read the image (5 bytes starting b'hello')" in error,
          "an unreadable image (pool %s): %s %s" % (pool, status, error))
    health = json.loads(urllib.request.urlopen(base + "/health", timeout=30).read())
    check(health.get("preprocess_workers", {}).get("ready") == int(pool),
          "/health gives the pool (%s): %s" % (pool, health))
    check(health.get("preparing") == 0, "/health: none left in the pool: %s" % health)
    if pool == "2":
        metrics = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
        check("batchscope_preprocess_workers_ready 2" in metrics, "/metrics gives the pool")
        for stage in ("prepare_wait", "prepare", "postprocess"):
            line = next((l for l in metrics.splitlines() if l.startswith(
                'batchscope_request_duration_seconds_count{stage="%s"' % stage)), "")
            check(line and float(line.split()[-1]) >= len(images),
                  "/metrics counts the %s stage of every request: %r" % (stage, line))
        # The pool is resized live, and serves on.
        put = urllib.request.Request(base + "/v1/config", method="PUT",
                                     data=json.dumps({"preprocess_workers": 1}).encode())
        with urllib.request.urlopen(put, timeout=30) as r:
            check(json.loads(r.read())["options"]["preprocess_workers"] == 1, "PUT /v1/config")
        import time  # noqa: E402
        for _ in range(100):  # the retired process quits as it finishes its request
            health = json.loads(urllib.request.urlopen(base + "/health", timeout=30).read())
            if health["preprocess_workers"]["ready"] == 1:
                break
            time.sleep(0.1)
        check(health["preprocess_workers"]["ready"] == 1, "one pool process left: %s" % health)
        out = infer(base, "digits", [{"name": "image", "datatype": "BYTES", "shape": [1],
                                      "data": images[:1]}])
        check(out["digit"] == expected[:1], "after the resize: %s" % out)
    stop(p)

p, base = start(os.path.join(MODELS, "python", "sentiment.py"))
texts = ["The food was great and the staff friendly!", "Not good: the room was dirty and cold.",
         "never bad, I would recommend it"]
out = infer(base, "sentiment", [{"name": "text", "datatype": "BYTES", "shape": [3], "data": texts}])
check(out["sentiment"] == ["positive", "negative", "positive"], "sentiment: %s" % out)
check(out["positive"][0] > 0.9 and out["positive"][1] < 0.1, "sentiment scores: %s" % out)
stop(p)
sys.exit(1 if failures else 0)
