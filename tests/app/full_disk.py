#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real full disk under serve --record: the history lives on a 384 KiB
tmpfs, and clients send until it fills. The recording stops with a clear
message on stderr; the server goes on answering; what was committed before
is still there (at least as many requests as a reader saw while it filled);
and the file opens afterwards. Needs root (mount); skipped (77) without.
Usage: full_disk.py BATCHSCOPE WORKDIR
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
MOUNT = os.path.join(DIR, "small")


def fail(msg):
    sys.exit("full_disk: " + msg)


def runs(*args):
    return subprocess.run([BIN, "runs", *args, "--history", os.path.join(MOUNT, "h.sqlite")],
                          capture_output=True, text=True)


def kept():
    m = re.search(r"requests  (\d+) kept", runs("show", "1").stdout)
    return int(m.group(1)) if m else 0


def post(port, n, statuses):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"data": [0.5] * 128})
    for _ in range(n):
        c.request("POST", "/infer", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        statuses.append(r.status)
    c.close()


def main():
    if os.geteuid() != 0:
        print("full_disk: skipped, mounting a tmpfs needs root")
        return 77
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(MOUNT)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", MOUNT],
                       capture_output=True, text=True)
    if m.returncode != 0:
        print("full_disk: skipped, cannot mount a tmpfs here: " + m.stderr.strip())
        return 77
    try:
        return run()
    finally:
        subprocess.run(["umount", "-l", MOUNT])


def run():
    err_path = os.path.join(DIR, "serve.err")
    with open(err_path, "w") as err:
        p = subprocess.Popen([BIN, "serve", "--synthetic", "100,5", "--port", "0", "--record",
                              "until full", "--history", os.path.join(MOUNT, "h.sqlite")],
                             stdout=subprocess.PIPE, stderr=err, text=True,
                             env=dict(os.environ, XDG_CACHE_HOME=os.path.join(DIR, "cache")))
    port = None
    deadline = time.time() + 60
    while time.time() < deadline and port is None:
        mm = re.search(r"listening on http://[0-9.]+:(\d+)", p.stdout.readline())
        port = int(mm.group(1)) if mm else None
    if port is None:
        p.kill()
        fail("serve never listened")

    def stderr():
        with open(err_path) as f:
            return f.read()

    seen_before = 0
    statuses = []
    deadline = time.time() + 120
    while "the recording stopped" not in stderr():
        if time.time() > deadline:
            p.kill()
            fail(f"the disk never filled; {len(statuses)} sent, {kept()} kept")
        ts = [threading.Thread(target=post, args=(port, 250, statuses)) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        time.sleep(1.2)  # a poll of the server's, and a commit
        if "the recording stopped" not in stderr():
            seen_before = max(seen_before, kept())
    message = stderr()
    if "No space left on device" not in message and "full" not in message:
        fail("the message does not say the disk is full: " + message)
    # Serving goes on.
    after = []
    post(port, 100, after)
    if set(after) != {200} or set(statuses) != {200}:
        fail(f"answers: {sorted(set(statuses))} while filling, {sorted(set(after))} after")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    if p.returncode != 0:
        fail(f"serve exited {p.returncode}: {out} {stderr()}")
    # The file opens, and holds at least what was committed before.
    listed = runs("list")
    if listed.returncode != 0 or "until full" not in listed.stdout:
        fail("the file does not open: " + listed.stdout + listed.stderr)
    n = kept()
    if n < seen_before or n == 0:
        fail(f"{n} requests kept after the disk filled; a reader saw {seen_before} before")
    print(f"full_disk: {len(statuses)} sent; {seen_before} seen kept before the disk filled, "
          f"{n} kept; stderr said: {message.strip()}")
    return 0


sys.exit(main())
