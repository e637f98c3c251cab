// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// FUZZ_CHECK: an invariant a fuzz target asserts. A failure names the
// condition and aborts, which libFuzzer keeps as a crash and the replay test
// reports as a failure; unlike assert() it stays on in release builds.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
