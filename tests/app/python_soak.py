# SPDX-License-Identifier: GPL-3.0-or-later
"""A soak of serve on a Python model whose workers are killed while traffic
flows: models/python/digits.py at two lanes with a preprocess pool of two,
eight clients each sending images of known digits over its own keep-alive
connection, and every KILL_EVERY seconds one worker process killed with
SIGKILL, in turn a lane's worker and a pool's process.

Every request carries its own id and gets exactly one answer: a 200 with the
right digit and its id, or a 503 or 504 for a request that was in flight when
a worker was killed. No request goes unanswered, no connection is reset, no
answer comes twice (an extra one would be read as the next request's answer,
or be left on the socket at the end). Once the traffic stops, /health has two
lane workers and two pool processes ready, restarted as often as each kind
was killed, and /metrics counts the same restarts; serve ends 0 on SIGTERM
and no worker outlives it. Every 5 s the script samples the resident memory
(VmRSS) of serve and of each worker, and prints the table at the end.

A worker's role comes from its command line: a pool's process is started
with --warm-batch 0 (it runs no predict), a lane's with the batch it warms
up at. Within a role, workers are labelled by pid order at the start, and a
restarted worker takes the label of the one it replaces.

Usage: python_soak.py BATCHSCOPE MODELS_DIR [DURATION_S [KILL_EVERY_S]]
       (defaults 30 and 20)
"""

import collections
import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from serve_lines import env_without_kept_cost, listening

sys.dont_write_bytecode = True  # no __pycache__ beside the helper in the source tree
from digit_images import digit_images  # noqa: E402  (tests/app/digit_images.py)

BIN, MODELS = sys.argv[1], sys.argv[2]
DURATION = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
KILL_EVERY = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
CLIENTS = 8
LANES = 2
POOL = 2
SAMPLE_EVERY = 5.0
READY_WAIT_S = 60.0  # how long workers may take to be ready again
CLIENT_TIMEOUT_S = 90.0  # past --worker-timeout-ms (30 s): a request unanswered
ROLES = ("lane", "preprocess")

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr, flush=True)
    return ok


# --- The server ---------------------------------------------------------------

err_file = tempfile.NamedTemporaryFile(mode="w+", prefix="python_soak_serve_", suffix=".err",
                                       delete=False)
serve = subprocess.Popen([BIN, "serve", "--port", "0", "--no-history",
                          "--model", os.path.join(MODELS, "python", "digits.py"),
                          "--lanes", str(LANES), "--preprocess-workers", str(POOL)],
                         stdout=subprocess.PIPE, stderr=err_file, text=True,
                         env=env_without_kept_cost("python_soak_cache_"))
first_line, m = listening(serve)
if not m:
    serve.kill()
    code = serve.wait()
    err_file.seek(0)
    raise SystemExit("FAIL: serve did not start (exit status %d): %r %s"
                     % (code, first_line, err_file.read()))
PORT = int(m.group(1))
BASE = "http://127.0.0.1:%d" % PORT


def get(path):
    try:
        with urllib.request.urlopen(BASE + path, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def health():
    status, body = get("/health")
    try:
        return status, json.loads(body)
    except ValueError:
        return status, {"unparsed": body}


# --- Workers: serve's children, their roles and labels -----------------------

def children(pid):
    """Live (not zombie) children of pid, from /proc/*/stat."""
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            live.append(int(entry))
    return sorted(live)


def role_of(pid):
    """'lane' or 'preprocess' from the worker's command line, or None."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    if "serve" not in argv or "--warm-batch" not in argv:
        return None
    return "preprocess" if argv[argv.index("--warm-batch") + 1] == "0" else "lane"


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


labels_lock = threading.Lock()
labels = {}  # pid -> (role, index), for workers seen alive
restarted_at = {}  # (role, index) -> pids it has had, in order


def scan():
    """The live workers as {(role, index): pid}; new pids take free labels."""
    with labels_lock:
        live = {}
        unlabelled = collections.defaultdict(list)
        for pid in children(serve.pid):
            role = role_of(pid)
            if role is None:
                continue
            if pid in labels:
                live[labels[pid]] = pid
            else:
                unlabelled[role].append(pid)
        for role, pids in unlabelled.items():
            count = LANES if role == "lane" else POOL
            free = [(role, i) for i in range(count) if (role, i) not in live]
            for pid, label in zip(sorted(pids), free):
                labels[pid] = label
                live[label] = pid
                restarted_at.setdefault(label, []).append(pid)
        return live


# --- Requests -------------------------------------------------------------------

images = []  # (body template with %s for the id, expected digit)
for b64, digit in digit_images():
    body = json.dumps({"id": "ID", "inputs": [{"name": "image", "datatype": "BYTES",
                                               "shape": [1], "data": [b64]}]})
    images.append((body.replace('"ID"', '"%s"', 1), digit))

stats_lock = threading.Lock()
answers = collections.Counter()  # request id -> answers read
statuses = collections.Counter()  # status -> count
error_texts = collections.Counter()  # (status, error text with numbers masked) -> count
errors_at = []  # (status, sent, answered) of each non-200
problems = []  # (time, what) the checks fail on
sent_total = [0]
ok_total = [0]
stop_at = [0.0]
t0 = time.monotonic()


def problem(what):
    with stats_lock:
        problems.append((time.monotonic() - t0, what))
        if len(problems) <= 20:  # the first ones as they come; the count at the end
            print("FAIL: %.1f s: %s" % (time.monotonic() - t0, what), file=sys.stderr,
                  flush=True)


def client(k):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=CLIENT_TIMEOUT_S)
    n = 0
    while time.monotonic() < stop_at[0]:
        rid = "c%d-%d" % (k, n)
        body, expected = images[(k + n) % len(images)]
        n += 1
        with stats_lock:
            sent_total[0] += 1
            answers[rid] += 0
        sent = time.monotonic()
        try:
            conn.request("POST", "/v2/models/digits/infer", body % rid,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
        except Exception as e:  # a reset, a closed connection, a timeout: all failures
            problem("request %s: %s: %s (no answer)" % (rid, type(e).__name__, e))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=CLIENT_TIMEOUT_S)
            continue
        answered = time.monotonic()
        try:
            reply = json.loads(data)
        except ValueError:
            reply = {"unparsed": data[:200].decode(errors="replace")}
        with stats_lock:
            answers[rid] += 1
            statuses[r.status] += 1
        if r.status == 200:
            got_id = reply.get("id")
            outs = {o["name"]: o["data"] for o in reply.get("outputs", [])}
            if got_id != rid:
                problem("request %s answered with the id %r (an answer to another request?)"
                        % (rid, got_id))
            elif outs.get("digit") != [expected]:
                problem("request %s: digit %s, expected %d" % (rid, outs.get("digit"), expected))
            else:
                with stats_lock:
                    ok_total[0] += 1
        else:
            text = str(reply.get("error", reply))
            text = re.sub(r"(pid|batch of) \d+", r"\1 N", text)[:240]
            with stats_lock:
                error_texts[(r.status, text)] += 1
                errors_at.append((r.status, sent - t0, answered - t0, rid))
            if r.status not in (503, 504):
                problem("request %s: status %d: %s" % (rid, r.status, reply))
        if r.getheader("Connection", "").lower() == "close" or r.will_close:
            problem("request %s: serve closed the connection after status %d" % (rid, r.status))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=CLIENT_TIMEOUT_S)
    # Nothing more may come on the connection: a second answer would be here.
    if conn.sock is not None:
        readable, _, _ = select.select([conn.sock], [], [], 0.5)
        if readable:
            extra = conn.sock.recv(4096)
            if extra:
                problem("client %d: bytes after the last answer: %r" % (k, extra[:200]))
    conn.close()


# --- Sampling --------------------------------------------------------------------

samples = []  # (t, requests ok per s since the last sample, server KiB, {label: (pid, KiB)})
sampler_stop = threading.Event()


def sampler():
    last_ok, last_t = 0, None
    while True:
        now = time.monotonic()
        live = scan()
        row = {label: (pid, rss_kib(pid)) for label, pid in live.items()}
        with stats_lock:
            ok = ok_total[0]
        rate = None if last_t is None else (ok - last_ok) / max(1e-9, now - last_t)
        last_ok, last_t = ok, now
        samples.append((now - t0, rate, rss_kib(serve.pid), row))
        if sampler_stop.wait(SAMPLE_EVERY):
            return


# --- The run -----------------------------------------------------------------------

def wait_ready(what, lane_restarts=None, pool_restarts=None):
    """Waits until every worker is ready (and restarted as often as given);
    the last /health."""
    deadline = time.monotonic() + READY_WAIT_S
    while True:
        status, h = health()
        w, p = h.get("workers", {}), h.get("preprocess_workers", {})
        if (w.get("ready") == LANES and p.get("ready") == POOL and
                lane_restarts in (None, w.get("restarts")) and
                pool_restarts in (None, p.get("restarts"))):
            return h
        if time.monotonic() > deadline:
            check(False, "%s: workers not ready after %.0f s: %d %s"
                  % (what, READY_WAIT_S, status, h))
            return h
        time.sleep(0.1)


h = wait_ready("at the start")
start_workers = scan()
check(sorted(start_workers) == sorted([("lane", i) for i in range(LANES)] +
                                      [("preprocess", i) for i in range(POOL)]),
      "serve's children are %d lane workers and %d pool processes: %s"
      % (LANES, POOL, {"%s %d" % k: v for k, v in start_workers.items()}))
print("serve pid %d on port %d; workers: %s" % (
    serve.pid, PORT, ", ".join("%s %d pid %d" % (r, i, p)
                               for (r, i), p in sorted(start_workers.items()))), flush=True)
print("duration %.0f s, a kill every %.0f s, %d clients" % (DURATION, KILL_EVERY, CLIENTS),
      flush=True)

t0 = time.monotonic()
stop_at[0] = t0 + DURATION
threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(CLIENTS)]
sampling = threading.Thread(target=sampler, daemon=True)
sampling.start()
for t in threads:
    t.start()

kills = []  # (t, role, index, pid)
recoveries = []  # s from each kill until /health has every worker ready, restarted
order = [(role, i) for i in range(max(LANES, POOL)) for role in ROLES
         if i < (LANES if role == "lane" else POOL)]
next_kill = t0 + KILL_EVERY
while True:
    now = time.monotonic()
    if next_kill >= stop_at[0] - 1.0 or now >= stop_at[0]:
        break  # no kill in the last second: its restart would race the end
    if now < next_kill:
        time.sleep(min(0.1, next_kill - now))
        continue
    wait_ready("before kill %d" % (len(kills) + 1))
    role, index = order[len(kills) % len(order)]
    live = scan()
    pid = live.get((role, index))
    if pid is None:
        check(False, "no live %s worker %d to kill: %s" % (role, index, live))
        next_kill += KILL_EVERY
        continue
    at = time.monotonic() - t0
    os.kill(pid, signal.SIGKILL)
    kills.append((at, role, index, pid))
    wait_ready("after kill %d" % len(kills),
               sum(1 for k in kills if k[1] == "lane"),
               sum(1 for k in kills if k[1] == "preprocess"))
    back = time.monotonic() - t0 - at
    recoveries.append(back)
    print("%7.1f s  killed %s %d (pid %d); every worker ready again %.2f s later"
          % (at, role, index, pid, back), flush=True)
    next_kill += KILL_EVERY

for t in threads:
    t.join(CLIENT_TIMEOUT_S + 30)
    check(not t.is_alive(), "a client thread still waits for an answer")
elapsed = time.monotonic() - t0
final = wait_ready("at the end")
sampler_stop.set()
sampling.join(10)
scan()  # labels for restarted workers that came up since the last sample

# --- Checks --------------------------------------------------------------------------

lane_kills = sum(1 for k in kills if k[1] == "lane")
pool_kills = sum(1 for k in kills if k[1] == "preprocess")
check(not problems, "%d requests went wrong, the first: %s" % (
    len(problems), "; ".join("%.1f s: %s" % p for p in problems[:5])))
twice = [rid for rid, n in answers.items() if n > 1]
never = [rid for rid, n in answers.items() if n == 0]
check(not twice, "%d requests answered more than once: %s" % (len(twice), twice[:10]))
check(not never, "%d requests never answered: %s" % (len(never), never[:10]))
check(sum(answers.values()) == sum(statuses.values()), "answers add up")
# A 503 or 504 answers a request that was in flight when a worker was killed.
SLACK = 0.05
unattributed = [e for e in errors_at if e[0] in (503, 504) and
                not any(e[1] - SLACK <= k[0] <= e[2] + SLACK for k in kills)]
check(not unattributed, "%d error answers to requests in flight at no kill: %s"
      % (len(unattributed), unattributed[:10]))
check(ok_total[0] > 0, "some requests answered 200")

w, p = final.get("workers", {}), final.get("preprocess_workers", {})
check(w.get("ready") == LANES and p.get("ready") == POOL,
      "/health: %d lane workers and %d pool processes ready: %s" % (LANES, POOL, final))
check(w.get("restarts") == lane_kills and w.get("deaths") == lane_kills,
      "/health: lane workers restarted and died %d times: %s" % (lane_kills, w))
check(p.get("restarts") == pool_kills and p.get("deaths") == pool_kills,
      "/health: pool processes restarted and died %d times: %s" % (pool_kills, p))
check(w.get("timeouts") == 0 and p.get("timeouts") == 0, "/health: no timeouts: %s" % final)
check(final.get("status") == "ok", "/health status: %s" % final)
status, metrics = get("/metrics")
check(status == 200, "/metrics answers: %d" % status)
for name, want in (("batchscope_worker_restarts_total", lane_kills),
                   ("batchscope_preprocess_worker_restarts_total", pool_kills),
                   ("batchscope_worker_deaths_total", lane_kills),
                   ("batchscope_preprocess_worker_deaths_total", pool_kills),
                   ("batchscope_workers_ready", LANES),
                   ("batchscope_preprocess_workers_ready", POOL)):
    mm = re.search(r"^%s(?:\{[^}]*\})? (\S+)$" % name, metrics, re.M)
    check(mm is not None and float(mm.group(1)) == want,
          "/metrics %s = %s, expected %d" % (name, mm and mm.group(1), want))
end_workers = scan()
check(len(end_workers) == LANES + POOL, "workers at the end: %s" % end_workers)
for label, pid in end_workers.items():
    killed = [k for k in kills if (k[1], k[2]) == label]
    check(len(restarted_at[label]) == 1 + len(killed),
          "%s %d had %d pids for %d kills: %s"
          % (label[0], label[1], len(restarted_at[label]), len(killed), restarted_at[label]))

serve.send_signal(signal.SIGTERM)
try:
    code = serve.wait(60)
except subprocess.TimeoutExpired:
    serve.kill()
    code = serve.wait()
check(code == 0, "serve ends 0 on SIGTERM: %s" % code)
for _ in range(50):
    left = [pid for pid in end_workers.values() if os.path.exists("/proc/%d" % pid)]
    if not left:
        break
    time.sleep(0.1)
check(not left, "no worker outlives serve: %s" % left)

# --- Report ----------------------------------------------------------------------------

MiB = 1024.0


def fmt(kib):
    return "-" if kib is None else "%.1f" % (kib / MiB)


cols = [("lane", i) for i in range(LANES)] + [("preprocess", i) for i in range(POOL)]
print()
print("RSS in MiB every %.0f s (* a new pid since the last sample; req/s: 200s per second "
      "since the last sample)" % SAMPLE_EVERY)
print("%7s %8s %8s " % ("t s", "req/s", "serve") +
      " ".join("%14s" % ("%s %d" % c) for c in cols))
last_pid = {}
for t, rate, server, row in samples:
    cells = []
    for c in cols:
        pid, kib = row.get(c, (None, None))
        mark = "*" if pid is not None and c in last_pid and last_pid[c] != pid else " "
        if pid is not None:
            last_pid[c] = pid
        cells.append("%14s" % ("%s%s" % (fmt(kib), mark) if pid else "(none)"))
    print("%7.1f %8s %8s " % (t, "-" if rate is None else "%.0f" % rate, fmt(server)) +
          " ".join(cells))

print()
print("error answers by text:")
for (status, text), n in sorted(error_texts.items()):
    print("  %5d x %d: %s" % (n, status, text))
if not error_texts:
    print("  none")
err_file.flush()
err_file.seek(0)
serve_err = err_file.read().splitlines()
print()
print("serve's standard error: %d lines; the last 20:" % len(serve_err))
for line in serve_err[-20:]:
    print("  " + line[:300])


def first_last_max(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return "first %s, last %s, max %s MiB" % (fmt(values[0]), fmt(values[-1]), fmt(max(values)))


print()
print("summary")
print("  duration            %.1f s, %d clients, a kill every %.0f s" % (elapsed, CLIENTS,
                                                                          KILL_EVERY))
print("  requests sent       %d" % sent_total[0])
print("  answered 200, right %d" % ok_total[0])
for status in sorted(statuses):
    print("  status %d          %d" % (status, statuses[status]))
print("  requests per second %.1f sent, %.1f answered 200" % (sent_total[0] / elapsed,
                                                              ok_total[0] / elapsed))
print("  kills               %d lane workers, %d pool processes" % (lane_kills, pool_kills))
print("  restarts (/health)  %s lane workers, %s pool processes"
      % (w.get("restarts"), p.get("restarts")))
print("  errors per kill     %s" % (
    ", ".join("%s %d at %.1f s: %d" % (r, i, at, sum(1 for e in errors_at
                                                      if e[1] - SLACK <= at <= e[2] + SLACK))
              for at, r, i, _ in kills) or "no kills"))
print("  back to ready after %s s (from the kill to /health's ready and restarts)"
      % ", ".join("%.2f" % r for r in recoveries))
print("  serve RSS           %s" % first_last_max([s[2] for s in samples]))
for role in ROLES:
    print("  %-10s RSS      %s (the largest of its workers)" % (
        role, first_last_max([max([kib for (r, _), (pid, kib) in s[3].items()
                                   if r == role and kib is not None] or [None],
                                  key=lambda v: -1 if v is None else v)
                              for s in samples])))
    for c in cols:
        if c[0] == role:
            print("    %-12s      %s; pids %s" % (
                "%s %d" % c,
                first_last_max([s[3].get(c, (None, None))[1] for s in samples]),
                restarted_at.get(c, [])))
print()
if failures:
    print("serve's standard error is kept in %s" % err_file.name)
    print("python_soak: %d checks failed:" % len(failures))
    for f in failures:
        print("  " + f)
    sys.exit(1)
err_file.close()
os.unlink(err_file.name)
print("python_soak: every check passed")
