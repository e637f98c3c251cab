#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""batchscope serve at its connection limit, in a child process whose
descriptor limit (RLIMIT_NOFILE) is lowered to 64.

1. The default limit comes from the descriptor limit (/metrics says 32).
2. 40 idle keep-alive clients: the longest-idle are closed to make room, and
   a new client's /health is answered.
3. Every connection busy (a request head half sent): a new client's /health
   is still answered, POST /infer gets 503 naming the limit, and both close.
4. With --max-connections as high as the descriptors, accepts fail
   (EMFILE): the server pauses accepting instead of spinning, counts the
   failures, and answers again once clients leave.
Usage: connection_limit.py BATCHSCOPE
"""
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time

BIN = sys.argv[1]


def start(*flags):
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    p = subprocess.Popen([BIN, "serve", "--synthetic", "200,10", "--port", "0", *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lower)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = p.stdout.readline()
        m = re.search(r"http://([0-9.]+):(\d+)", line)
        if m:
            return p, int(m.group(2))
    p.kill()
    sys.exit("serve never said where it listens")


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def request(s, method, path, body=b""):
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    s.sendall(head.encode() + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before an answer to {method} {path}: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    status = int(head.split()[1])
    return status, head.decode(), rest[:length].decode()


def one(port, method, path, body=b""):
    s = connect(port)
    try:
        return request(s, method, path, body)
    finally:
        s.close()


def metric(port, name):
    _, _, text = one(port, "GET", "/metrics")
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    if not m:
        sys.exit(f"/metrics has no {name}")
    return int(m.group(1))


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def check(ok, what):
    if not ok:
        sys.exit("FAILED: " + what)
    print("ok:", what)


INFER = json.dumps({"data": [0.25] * 128}).encode()

# 1-3: the default limit.
p, port = start()
try:
    limit = metric(port, "batchscope_http_connections_max")
    check(limit == 32, f"the default limit under 64 descriptors is 32 (got {limit})")

    idle = []
    for _ in range(40):
        s = connect(port)
        status, _, _ = request(s, "GET", "/health")
        assert status == 200
        idle.append(s)
    status, _, _ = one(port, "GET", "/health")
    check(status == 200, "/health is answered with 40 idle clients connected")
    closed = metric(port, "batchscope_http_connections_closed_for_room_total")
    check(closed >= 8, f"idle connections were closed to make room ({closed})")
    # The oldest went first: the first client finds its connection closed.
    idle[0].settimeout(5)
    try:
        first = idle[0].recv(1)
    except ConnectionResetError:
        first = b""
    check(first == b"", "the longest-idle client's connection was the one closed")
    for s in idle:
        s.close()
    time.sleep(0.3)

    busy = []
    for _ in range(limit):
        s = connect(port)
        s.sendall(b"POST /infer HTTP/1.1\r\nHost: x\r\n")  # the head never ends
        busy.append(s)
    time.sleep(0.3)
    status, head, _ = one(port, "GET", "/health")
    check(status == 200 and "Connection: close" in head,
          "/health over the limit is answered, and its connection closed")
    status, head, body = one(port, "POST", "/infer", INFER)
    check(status == 503 and "Retry-After" in head and "limit of 32 connections" in body,
          f"POST /infer over the limit gets 503 naming the limit: {body}")
    for s in busy:
        s.close()
    time.sleep(0.3)
    refused = metric(port, "batchscope_http_refused_at_limit_total")
    check(refused == 1, f"/metrics counts the refusal ({refused})")
    status, _, _ = one(port, "POST", "/infer", INFER)
    check(status == 200, "POST /infer is served again once the busy clients leave")
finally:
    p.terminate()
    p.wait(timeout=30)

# 4: a limit the descriptors cannot hold.
p, port = start("--max-connections", "64")
try:
    held = []
    for _ in range(80):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # busy: never evicted
            held.append(s)
        except OSError:
            break
    time.sleep(0.5)
    before = cpu_ticks(p.pid)
    time.sleep(2)
    spent = cpu_ticks(p.pid) - before
    ticks = os.sysconf("SC_CLK_TCK")
    check(spent < ticks // 2,
          f"out of descriptors, serve does not spin ({spent} ticks of CPU in 2 s, {ticks}/s)")
    for s in held:
        s.close()
    time.sleep(0.5)
    status, _, _ = one(port, "GET", "/health")
    check(status == 200, "/health is answered again once the clients leave")
    errors = metric(port, "batchscope_http_accept_errors_total")
    check(errors >= 1, f"/metrics counts the failed accepts ({errors})")
finally:
    p.terminate()
    out, _ = p.communicate(timeout=30)
    check(p.returncode == 0, f"serve stopped cleanly (exit {p.returncode})")
# Values refused by name, with the value quoted.
for value, says in (("0", "out of range"), ("70", "descriptor limit (ulimit -n) is 64"),
                    ("1.5", "whole number")):
    r = subprocess.run([BIN, "serve", "--synthetic", "1,1", "--max-connections", value],
                       capture_output=True, text=True, timeout=30,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    check(r.returncode == 2 and value in r.stderr and says in r.stderr,
          f"--max-connections {value} is refused: {r.stderr.strip()}")
# The window's flag is read by the same rule before any window opens.
r = subprocess.run([BIN, "gui", "--max-connections", "0"], capture_output=True, text=True,
                   timeout=30, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
check(r.returncode == 2 and "allowed 1 to 64" in r.stderr,
      f"gui --max-connections 0 is refused: {r.stderr.strip()}")
print("serve kept to its connection limit")
