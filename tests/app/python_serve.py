# SPDX-License-Identifier: GPL-3.0-or-later
"""serve on a Python model, as a client sees it: real worker processes, real
sockets on 127.0.0.1. Each fault the handler makes answers its own request
(500, 503, 504) and the server keeps serving; a handler that cannot start
ends serve with its traceback; SIGTERM leaves no worker behind.

Usage: python_serve.py BATCHSCOPE HANDLERS_DIR MODELS_DIR
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from serve_lines import env_without_kept_cost, listening
from concurrent.futures import ThreadPoolExecutor

BIN, HANDLERS, MODELS = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


ENV = env_without_kept_cost("python_serve_cache_")


def start(*args):
    # Its standard error (the workers' lines too) goes to a file: a pipe
    # nobody reads would fill and hold the lanes up.
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--no-history", *args],
                         stdout=subprocess.PIPE, stderr=err, text=True, env=ENV)
    line, m = listening(p)
    if not m:
        p.kill()
        err.seek(0)
        raise SystemExit("serve did not start: %r %s" % (line, err.read()))
    return p, "http://127.0.0.1:%s" % m.group(1)


def call(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def infer(base, first, shape=(1, 4)):
    n = shape[0] * shape[1]
    data = [first] + [0.0] * (n - 1)
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(shape), "data": data}]}
    return call(base + "/v2/models/faults/infer", body)


def expect(status_body, code, text, what):
    status, body = status_body
    check(status == code and text in body, "%s: got %d %s" % (what, status, body[:300]))


def workers_of(server):
    """The worker processes of `server` (its children)."""
    out = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


serve, base = start("--model", os.path.join(HANDLERS, "faults.py"), "--lanes", "2",
                    "--max-wait-ms", "1", "--worker-timeout-ms", "1500",
                    "--model-option", "scale=0.5")
status, meta = call(base + "/v2/models/faults")
check(status == 200 and json.loads(meta)["platform"] == "python", "metadata: " + meta)
expect(infer(base, 1), 200, "[2.5,0.5,0.5,0.5]", "an ordinary request")
expect(infer(base, 13), 500, "Model.predict raised ValueError: thirteen is unlucky", "raise")
expect(infer(base, 17), 500, "has shape [1, 3] for a batch of 1; expected [1, 4]", "shape")
expect(infer(base, 14), 503, "killed by signal 11 (SIGSEGV)", "segfault")
expect(infer(base, 15), 503, "exited with status 3", "exit")
expect(infer(base, 16), 504, "--worker-timeout-ms = 1500", "hang")
expect(infer(base, 1, (1, 3)), 422, "x", "a wrong shape, refused before the model")
with ThreadPoolExecutor(8) as pool:
    answers = list(pool.map(lambda i: infer(base, float(i % 10)), range(64)))
check(all(s == 200 for s, _ in answers), "after the faults: %s" % [s for s, _ in answers])
for _ in range(100):
    health = json.loads(call(base + "/health")[1])
    if health["workers"]["ready"] == 2:
        break
    time.sleep(0.1)
check(health["status"] == "ok" and health["workers"]["ready"] == 2 and
      health["workers"]["restarts"] == 3 and health["workers"]["timeouts"] == 1,
      "health: %s" % health)
metrics = call(base + "/metrics")[1]
check("batchscope_worker_restarts_total 3" in metrics, "metrics name the restarts")
pids = workers_of(serve)
check(len(pids) == 2, "two workers run: %s" % pids)
serve.send_signal(signal.SIGTERM)
check(serve.wait(30) == 0, "serve ends on SIGTERM")
for _ in range(50):  # a worker told to quit is gone within a second
    left = [p for p in pids if os.path.exists("/proc/%d" % p)]
    if not left:
        break
    time.sleep(0.1)
check(not left, "no worker outlives serve: %s" % left)

# A handler that cannot start ends serve with its traceback.
r = subprocess.run([BIN, "serve", "--port", "0", "--no-history", "--model",
                    os.path.join(HANDLERS, "broken_init.py")],
                   capture_output=True, text=True, timeout=60)
check(r.returncode != 0 and "RuntimeError: no weights found at /nowhere" in r.stderr,
      "broken_init: %d %s" % (r.returncode, r.stderr[-500:]))
r = subprocess.run([BIN, "serve", "--port", "0", "--no-history", "--model",
                    os.path.join(HANDLERS, "two_classes.py")],
                   capture_output=True, text=True, timeout=60)
check(r.returncode != 0 and "pick one with --class" in r.stderr, "two classes: " + r.stderr)
r = subprocess.run([BIN, "serve", "--port", "0", "--model", os.path.join(MODELS, "mlp.pt"),
                    "--class", "Mlp"], capture_output=True, text=True, timeout=60)
check(r.returncode != 0 and "--class is for a Python model" in r.stderr, "class on .pt: " +
      r.stderr)

# --class picks one of two.
serve, base = start("--model", os.path.join(HANDLERS, "two_classes.py"), "--class", "Second")
body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
expect(call(base + "/v2/models/two_classes/infer", body), 200, "[3,4]", "--class Second")
serve.send_signal(signal.SIGTERM)
serve.wait(30)

sys.exit(1 if failures else 0)
