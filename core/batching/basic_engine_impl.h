// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Definitions of BasicEngine's members. Included by the few files that
// instantiate the template (engine.cpp, batched_fn.h), not by its users.

#include "batching/basic_engine_batch.h"
#include "batching/basic_engine_control.h"
#include "batching/basic_engine_deadlines.h"
#include "batching/basic_engine_lanes.h"
#include "batching/basic_engine_padding.h"
#include "batching/basic_engine_planner.h"
#include "batching/basic_engine_queue.h"
#include "batching/basic_engine_stage.h"
