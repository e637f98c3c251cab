#!/usr/bin/env bash
# The Debian package CPack builds (what scripts/package runs): its declared
# dependencies name the runtime libraries (LibTorch, Qt, QCustomPlot,
# jemalloc), OpenBLAS and Qt's platform plugins; it holds the executable, the
# models, the manual page, the completion and the desktop files; and the
# executable unpacked from it runs from another folder and finds its models.
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
            ./usr/share/applications/org.batchscope.Batchscope.desktop \
            ./usr/share/metainfo/org.batchscope.Batchscope.metainfo.xml \
            ./usr/share/icons/hicolor/48x48/apps/batchscope.png ./usr/share/doc/batchscope/README.md; do
  grep -qE " $path\$" "$work/contents.txt" || fail "the package lacks $path"
done
dpkg-deb -x "$deb" "$work/root"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
"$work/root/usr/bin/batchscope" --version | grep -qxF "Models: $work/root/usr/share/batchscope/models" ||
  fail "the unpacked batchscope does not find its models"
echo "package_test: $(basename "$deb") depends on: $depends"
