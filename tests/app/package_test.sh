#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Debian package CPack builds (what scripts/package runs): its declared
# dependencies name the runtime libraries (LibTorch, Qt, QCustomPlot,
# jemalloc), OpenBLAS and Qt's platform plugins; it holds the executable, the
# models, the manual page, the completion and the desktop files; and the
# executable unpacked from it runs from another folder, names the package's
# version and finds its models. lintian finds no error and no warning in it.
# Usage: package_test.sh BUILD_DIR WORKDIR
set -euo pipefail
unset BATCHSCOPE_MODELS  # the installed prefix is under test
build=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work"
fail() { echo "package_test: $*" >&2; exit 1; }
(cd "$build" && cpack -G DEB -B "$work" >"$work/cpack.log") || fail "cpack: $(tail "$work/cpack.log")"
deb=$(ls "$work"/batchscope_*_amd64.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libtorch1.13 libqt6widgets6 libqt6network6 libqcustomplot2.1-qt6 libjemalloc2 \
           libopenblas0-pthread qt6-qpa-plugins libstdc++6; do
  grep -qF "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
# No build-time package: a compiler, headers or a test framework.
if grep -qE -- '-dev|gtest|benchmark|clang' <<<"$depends"; then fail "Depends names a build package: $depends"; fi
dpkg-deb -c "$deb" >"$work/contents.txt"
for path in ./usr/bin/batchscope ./usr/share/batchscope/models/mlp.pt ./usr/share/batchscope/models/mlp.json \
            ./usr/share/man/man1/batchscope.1.gz ./usr/share/bash-completion/completions/batchscope \
            ./usr/share/applications/org.batchscope.batchscope.desktop \
            ./usr/share/metainfo/org.batchscope.batchscope.metainfo.xml \
            ./usr/share/icons/hicolor/48x48/apps/batchscope.png ./usr/share/doc/batchscope/README.md; do
  grep -qE " $path\$" "$work/contents.txt" || fail "the package lacks $path"
done
# Debian's policy as lintian reads it: no error and no warning.
lintian --fail-on error,warning --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 ||
  fail "lintian: $(grep -E '^[EW]:' "$work/lintian.txt" || cat "$work/lintian.txt")"
# The copyright file (DEP-5) and the changelog made from CHANGELOG.md.
grep -qE " ./usr/share/doc/batchscope/copyright\$" "$work/contents.txt" || fail "the package has no copyright file"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/batchscope/changelog.gz | gzip -d >"$work/changelog" ||
  fail "the package has no changelog.gz"
version=$(dpkg-deb -f "$deb" Version)
head -n 1 "$work/changelog" | grep -qxF "batchscope ($version) unstable; urgency=medium" ||
  fail "the changelog does not start at $version: $(head -n 1 "$work/changelog")"
maintainer=$(dpkg-deb -f "$deb" Maintainer)
grep -qF -- " -- $maintainer  " "$work/changelog" || fail "the changelog is not signed by the Maintainer ($maintainer)"
dpkg-deb -x "$deb" "$work/root"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
"$work/root/usr/bin/batchscope" --version >"$work/version.txt"
grep -qxF "Models: $work/root/usr/share/batchscope/models" "$work/version.txt" ||
  fail "the unpacked batchscope does not find its models"
grep -qE "^batchscope $version( |\$)" "$work/version.txt" ||
  fail "--version does not name the package's version $version: $(head -n 1 "$work/version.txt")"
echo "package_test: $(basename "$deb") depends on: $depends"
