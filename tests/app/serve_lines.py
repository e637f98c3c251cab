# SPDX-License-Identifier: GPL-3.0-or-later
"""What the Python model tests share about a `serve` they start: an
environment that keeps no cost of this machine's, and the line that says
where it listens."""
import os
import re
import tempfile


def env_without_kept_cost(prefix):
    """os.environ with XDG_CACHE_HOME in a new temporary folder: serve finds no
    kept cost there, whose lines would come before the listening line."""
    return dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(prefix=prefix))


def listening(p, most=20):
    """The line of `p`'s output that says where it listens, read among its
    first `most` lines, and its match (None where none said it)."""
    line = ""
    for _ in range(most):
        line = p.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if m or not line:
            return line, m
    return line, None
