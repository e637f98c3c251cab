#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds tests/embed/outside.cpp as a program outside the tree would be built
# (-I core, lib/libbatchscope_engine.a, -pthread) and runs it.
# Usage: embed_test.sh CXX PROJECT_ROOT ARCHIVE SCRATCH_DIR
set -euo pipefail
cxx=$1
root=$2
archive=$3
scratch=$4
mkdir -p "$scratch"
"$cxx" -std=c++20 -O1 -I"$root/core" "$root/tests/embed/outside.cpp" "$archive" -pthread \
  -o "$scratch/outside"
"$scratch/outside"
