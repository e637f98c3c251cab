#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""batchscope serve with 256 descriptors (RLIMIT_NOFILE) and 400 clients
that connect at once and send nothing: a new client's GET /health is
answered within 2 s, every time of 20.

The 400 are accepted in one pass until the connection limit; none of them
is known to be idle yet, so the pass cannot close one to make room and
accepting pauses. A pass 100 ms on finds them idle and closes the
longest-idle for each new client, /health's among them.
Usage: health_at_fd_limit.py BATCHSCOPE [TRIES]
"""
import re
import resource
import socket
import subprocess
import sys
import time

BIN = sys.argv[1]
TRIES = int(sys.argv[2]) if len(sys.argv) > 2 else 20
CLIENTS = 400


def start():
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    p = subprocess.Popen([BIN, "serve", "--synthetic", "200,10", "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=lower)
    deadline = time.time() + 30
    while time.time() < deadline:
        m = re.search(r"http://([0-9.]+):(\d+)", p.stdout.readline())
        if m:
            return p, int(m.group(2))
    p.kill()
    sys.exit("serve never said where it listens")


def health(port):
    """The answer's status line, or why there was none within 2 s."""
    t0 = time.time()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    return f"closed after {time.time() - t0:.3f} s"
                data += chunk
            return data.split(b"\r\n")[0].decode()
    except OSError as e:
        return f"{type(e).__name__} after {time.time() - t0:.3f} s"


def main():
    # This process holds the 400 silent sockets itself.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < CLIENTS + 64:
        want = CLIENTS + 64 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    failed = []
    for t in range(TRIES):
        p, port = start()
        silent = []
        try:
            for _ in range(CLIENTS):
                s = socket.socket()
                s.setblocking(False)
                try:
                    s.connect(("127.0.0.1", port))
                except BlockingIOError:
                    pass
                silent.append(s)
            status = health(port)
            print(f"try {t + 1}: {status}", flush=True)
            if status != "HTTP/1.1 200 OK":
                failed.append(t + 1)
        finally:
            for s in silent:
                s.close()
            p.kill()
            p.wait()
    if failed:
        sys.exit(f"/health went unanswered within 2 s in tries {failed} of {TRIES}")
    print(f"/health answered in all {TRIES} tries")


main()
