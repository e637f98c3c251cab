// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BatchedFn for a program built outside this tree: compile with -I core and
// link build/lib/libbatchscope_engine.a (the Qt-free rooms in one archive)
// with -pthread. See batching/batched_fn.h.

#include "batching/batched_fn.h"
