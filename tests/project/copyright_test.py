#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""debian/copyright is machine-readable (DEP-5, parsed strictly by Debian's
python3-debian), each of its Files patterns names files that exist, each
licence it names has its text or points at Debian's common-licenses file
that exists, and it agrees with every source file's SPDX line.

Usage: copyright_test.py PROJECT_ROOT   (Debian's /usr/bin/python3: the
module is python3-debian's; run from outside the project, whose own debian/
folder would hide the module)
"""
import fnmatch
import os
import re
import subprocess
import sys

from debian.copyright import Copyright

SPDX_OF = {"GPL-3+": "GPL-3.0-or-later", "CC0-1.0": "CC0-1.0"}


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout:
        return [f for f in out.stdout.splitlines() if os.path.isfile(os.path.join(root, f))]
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "build", "node_modules") and not d.startswith("build-")]
        files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return files


def main(root):
    failures = []
    with open(os.path.join(root, "debian", "copyright"), encoding="utf-8") as f:
        c = Copyright(f, strict=True)
    if c.header.upstream_name != "Batchscope":
        failures.append(f"Upstream-Name is {c.header.upstream_name!r}")
    files = tracked(root)

    for p in c.all_files_paragraphs():
        for pattern in p.files:
            if not any(fnmatch.fnmatchcase(f, pattern) for f in files):
                failures.append(f"Files: {pattern} matches no file of the project")
        if not p.copyright:
            failures.append(f"Files: {' '.join(p.files)} has no Copyright")

    standalone = {p.license.synopsis: p.license.text for p in c.all_license_paragraphs()}
    used = {p.license.synopsis for p in c.all_files_paragraphs()}
    for name in sorted(used):
        text = standalone.get(name)
        if not text:
            failures.append(f"License: {name} has no paragraph with its text")
            continue
        for path in re.findall(r'"(/usr/share/common-licenses/[^"]+)"', text):
            if not os.path.isfile(path):
                failures.append(f"License: {name} points at {path}, which does not exist")
        if name not in SPDX_OF:
            failures.append(f"License: {name} has no SPDX identifier in this test's table")

    # Each source file's SPDX line names the licence its paragraph gives.
    spdx = re.compile(r"SPDX-License-Identifier: (\S+)")
    checked = 0
    for f in files:
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                head = fh.readline() + fh.readline()
        except (UnicodeDecodeError, OSError):
            continue
        m = spdx.search(head)
        if not m:
            continue
        checked += 1
        paragraph = c.find_files_paragraph(f)
        want = SPDX_OF.get(paragraph.license.synopsis) if paragraph else None
        if m.group(1) != want:
            failures.append(f"{f}: its SPDX line says {m.group(1)}, debian/copyright says "
                            f"{paragraph.license.synopsis if paragraph else 'nothing'}")
    if checked < 100:
        failures.append(f"only {checked} files carry an SPDX line")

    for line in failures:
        print("copyright_test:", line, file=sys.stderr)
    if not failures:
        print(f"copyright_test: ok ({len(files)} files, {checked} SPDX lines agree)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
