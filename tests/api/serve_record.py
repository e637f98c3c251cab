#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""batchscope serve --record keeps what its clients send in the run history.

- A client sends 1,000 tensor requests over 4 keep-alive connections:
  after SIGINT the history holds one run of kind serve with 1,000 requests
  and the batches they ran in (their batch ids and sizes, and the batches'
  mean size), finished, with its figures.
- --record-every 1 cuts a stream of requests over about 3 s into several
  runs whose requests add up to every one sent, each kept once.
- A generative server records its completions (kind serve, 20 requests).
- Nothing of a request's body is stored: a marker sent in every body is not
  in the file. With --record-bodies, the bodies are kept and export as JSON
  lines, in arrival order.
Usage: serve_record.py BATCHSCOPE WORKDIR
"""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

BIN, DIR = sys.argv[1], sys.argv[2]
shutil.rmtree(DIR, ignore_errors=True)
os.makedirs(DIR)
HISTORY = os.path.join(DIR, "history.sqlite")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(DIR, "cache"))
MARKER = 0.123456789


def fail(msg):
    sys.exit("serve_record: " + msg)


def start(*args):
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--history", HISTORY, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    deadline = time.time() + 60
    seen = []
    while time.time() < deadline:
        line = p.stdout.readline()
        seen.append(line)
        m = re.search(r"listening on http://([0-9.]+):(\d+)", line)
        if m:
            return p, int(m.group(2)), seen
        if not line and p.poll() is not None:
            break
    p.kill()
    fail("serve never said where it listens: " + "".join(seen))


def stop(p, seen):
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    text = "".join(seen) + out
    if p.returncode != 0:
        fail(f"serve exited {p.returncode}: {text}")
    if "recorded" not in text:
        fail("serve did not say what it recorded: " + text)
    return text


def send(port, n, path, body, pace=0.0):
    """n POSTs on one keep-alive connection; the statuses."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    statuses = []
    for _ in range(n):
        c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        statuses.append(r.status)
        if pace:
            time.sleep(pace)
    c.close()
    return statuses


def clients(port, per, count, path, body, pace=0.0):
    results = []
    lock = threading.Lock()

    def one():
        s = send(port, per, path, body, pace)
        with lock:
            results.extend(s)

    ts = [threading.Thread(target=one) for _ in range(count)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if results.count(200) != per * count:
        fail(f"{len(results) - results.count(200)} of {len(results)} requests failed: "
             f"{sorted(set(results))}")


def runs(*args):
    out = subprocess.run([BIN, "runs", *args, "--history", HISTORY], capture_output=True,
                         text=True, env=ENV)
    if out.returncode != 0:
        fail(f"runs {' '.join(args)}: {out.stderr}")
    return out.stdout


def serve_ids():
    return [int(line.split()[0]) for line in runs("list", "--kind", "serve").splitlines()[1:]
            if line.split() and line.split()[0].isdigit()]


def kept(run_id):
    show = runs("show", str(run_id))
    m = re.search(r"requests  (\d+) kept of (\d+)", show)
    if not m:
        fail("no request count: " + show)
    return int(m.group(1)), show


TENSOR = json.dumps({"data": [MARKER] * 128})

# 1,000 requests, one run.
p, port, seen = start("--synthetic", "300,20", "--record", "clients of the test")
clients(port, 250, 4, "/infer", TENSOR)
stop(p, seen)
ids = serve_ids()
if len(ids) != 1:
    fail(f"{len(ids)} serve runs after one recording: {runs('list')}")
n, show = kept(ids[0])
if n != 1000:
    fail(f"kept {n} requests of 1000: {show}")
if "clients of the test" not in show or "finished  no" in show:
    fail("label or finish: " + show)
m = re.search(r"batch_mean +([0-9.]+)", show)
if not m or float(m.group(1)) < 1:
    fail("no batches kept: " + show)
runs("export", str(ids[0]), "--format", "csv", "--out", os.path.join(DIR, "one"))
with open(os.path.join(DIR, "one_requests.csv")) as f:
    rows = f.read().splitlines()[1:]
batches = {r.split(",")[7] for r in rows}
if len(rows) != 1000 or "0" in batches or len(batches) < 2:
    fail(f"{len(rows)} rows, batch ids {sorted(batches)[:5]}...")
print(f"one run: 1000 requests in {len(batches)} batches")

# Cut every second: every request kept once, over several runs.
p, port, seen = start("--synthetic", "300,20", "--record", "cut", "--record-every", "1")
clients(port, 150, 2, "/infer", TENSOR, pace=0.02)
stop(p, seen)
cut = [i for i in serve_ids() if i not in ids]
total = sum(kept(i)[0] for i in cut)
if len(cut) < 2 or total != 300:
    fail(f"{len(cut)} runs holding {total} requests of 300: {runs('list', '--kind', 'serve')}")
print(f"cut every second: {len(cut)} runs holding {total} requests")

# A generative server.
before = set(serve_ids())
p, port, seen = start("--synthetic-lm", "2000,200", "--record")
body = json.dumps({"model": "synthetic_lm", "prompt": "hello " * 8, "max_tokens": 8})
clients(port, 5, 4, "/v1/completions", body)
stop(p, seen)
gen = [i for i in serve_ids() if i not in before]
if len(gen) != 1 or kept(gen[0])[0] != 20:
    fail(f"generative: runs {gen}: {runs('list', '--kind', 'serve')}")
if "served clients" not in kept(gen[0])[1]:
    fail("default label: " + kept(gen[0])[1])
print("generative: 20 requests")

# With --record-bodies, the bodies are kept too, and export as JSON lines.
before = set(serve_ids())
p, port, seen = start("--synthetic", "300,20", "--record", "with bodies", "--record-bodies")
clients(port, 10, 2, "/infer", json.dumps({"data": [0.5] * 128}))
stop(p, seen)
wb = [i for i in serve_ids() if i not in before]
if len(wb) != 1 or kept(wb[0])[0] != 20:
    fail(f"--record-bodies: runs {wb}: {runs('list', '--kind', 'serve')}")
runs("export", str(wb[0]), "--format", "bodies", "--out", os.path.join(DIR, "bodies.jsonl"))
with open(os.path.join(DIR, "bodies.jsonl")) as f:
    lines = [json.loads(line) for line in f]
if len(lines) != 20 or {x["route"] for x in lines} != {"/infer"} or \
        json.loads(lines[0]["body"]) != {"data": [0.5] * 128}:
    fail(f"bodies export: {len(lines)} lines, first {lines[:1]}")
if sorted(x["at_ms"] for x in lines) != [x["at_ms"] for x in lines]:
    fail("bodies not in arrival order")
print("with bodies: 20 requests and their bodies")
# A run without them says so.
out = subprocess.run([BIN, "runs", "export", str(ids[0]), "--format", "bodies", "--out",
                      os.path.join(DIR, "none.jsonl"), "--history", HISTORY],
                     capture_output=True, text=True, env=ENV)
if out.returncode == 0 or "keeps no request bodies" not in out.stderr:
    fail("export of bodies from a run without them: " + out.stderr)

# Without --record-bodies, no body is stored.
for name in os.listdir(DIR):
    if name.startswith("history.sqlite"):
        with open(os.path.join(DIR, name), "rb") as f:
            if str(MARKER).encode() in f.read():
                fail(f"a request body is in {name}")
print("serve_record: ok")
