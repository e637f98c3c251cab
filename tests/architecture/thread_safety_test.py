#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Clang's thread-safety analysis holds the lock contracts.

Compiles, syntax only, with clang++ -Wthread-safety -Wthread-safety-beta
-Werror=thread-safety (the flags every clang build of the project uses,
CMakeLists.txt), each translation unit below as it is, which must pass, and
then a scratch copy of core/ in which the first `MutexLock ...(mu_);` of a
named function is deleted, so that the function touches guarded state
without the lock: that must fail, naming the mutex. Last, the batching
engine with its two locks taken in the wrong order (mu_, then lanes_mu_,
which is ACQUIRED_BEFORE it) must fail, naming both. The compile flags are
the build's own (compile_commands.json), with the compiler swapped.

Usage: thread_safety_test.py PROJECT_ROOT BUILD_DIR SCRATCH_DIR
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

# (translation unit, file the lock is deleted from, the function it is in)
CASES = [
    ("core/batching/engine.cpp", "core/batching/basic_engine_control.h",
     "BasicEngine<In, Out>::set_record_capacity("),
    ("core/runs/history_writer.cpp", "core/runs/history_writer.cpp", "HistoryWriter::failure("),
    ("core/generation/gen_engine.cpp", "core/generation/gen_engine.cpp", "GenEngine::status("),
    ("core/http/http_listener.cpp", "core/http/http_listener.cpp", "void deliver("),
]
LOCK = re.compile(r"^\s*MutexLock \w+\([\w>-]*mu_?\);\s*$", re.M)
# (translation unit, file, the line that takes the later lock, the line
# planted before it that takes the earlier one first)
ORDER = ("core/batching/engine.cpp", "core/batching/basic_engine_lanes.h",
         "  MutexLock lg(lanes_mu_);\n  if (threads_.size() < count)",
         "  MutexLock early(mu_);\n")


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def clang_command(entry, root, core):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = ["clang++"], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = True
            continue
        if a.startswith("-fsanitize") or a == "-Wno-restrict":
            continue
        out.append(a.replace(os.path.join(root, "core"), core))
    return out + ["-Wno-unknown-warning-option", "-fsyntax-only", "-Wthread-safety",
                  "-Wthread-safety-beta", "-Werror=thread-safety"]


def sources_of(file):
    """The sources a compile command compiles: a unity file's includes
    (CMAKE_UNITY_BUILD), else the file itself."""
    if not re.search(r"unity_\d+_cxx\.cxx$", file):
        return [file]
    with open(file, encoding="utf-8") as f:
        return re.findall(r'^#include "([^"]+)"', f.read(), re.M)


def compile_unit(entry, root, core, unit):
    cmd = clang_command(entry, root, core) + [os.path.join(core, os.path.relpath(unit, "core"))]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=entry["directory"])
    return run.returncode, run.stderr


def main():
    root, build, scratch = (os.path.abspath(a) for a in sys.argv[1:4])
    if shutil.which("clang++") is None:
        print("SKIP: no clang++ (Debian: clang)")
        sys.exit(77)
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = {}
        for e in json.load(f):
            for source in sources_of(e["file"]):
                commands[os.path.relpath(source, root)] = e
    for unit, planted, function in CASES:
        entry = commands.get(unit)
        if entry is None:
            fail(f"{unit} is not in {build}/compile_commands.json")
        code, err = compile_unit(entry, root, os.path.join(root, "core"), unit)
        if code != 0:
            fail(f"{unit} does not pass the analysis as it is:\n{err}")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(os.path.join(root, "core"), os.path.join(scratch, "core"))
        path = os.path.join(scratch, planted)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        at = text.find(function)
        m = LOCK.search(text, at) if at >= 0 else None
        if m is None:
            fail(f"{planted} holds no `MutexLock ...(mu_);` line in {function} to delete")
        text = text[: m.start()] + text[m.end() :]
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        code, err = compile_unit(entry, root, os.path.join(scratch, "core"), unit)
        if code == 0:
            fail(f"{unit} passed with the lock deleted from {function} in {planted}")
        if not re.search(r"requires holding mutex '[\w:>-]*mu_?'", err):
            fail(f"{unit}: the analysis does not name the mutex:\n{err}")
        print(f"ok: {unit} passes; without the lock in {function}: "
              f"{err.count('requires holding')} finding(s)")

    unit, planted, line, early = ORDER
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(os.path.join(root, "core"), os.path.join(scratch, "core"))
    path = os.path.join(scratch, planted)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if line not in text:
        fail(f"{planted} no longer has the line the lock-order case plants before:\n{line}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(line, early + line.replace("\n", "\n  early.unlock();\n", 1), 1))
    code, err = compile_unit(commands[unit], root, os.path.join(scratch, "core"), unit)
    if code == 0:
        fail(f"{unit} passed with mu_ taken before lanes_mu_ in {planted}")
    if "mutex 'lanes_mu_' must be acquired before 'mu_'" not in err:
        fail(f"{unit}: the analysis does not name the lock order:\n{err}")
    print(f"ok: {unit} with mu_ taken before lanes_mu_: "
          f"{err.count('must be acquired before')} finding(s)")


if __name__ == "__main__":
    main()
