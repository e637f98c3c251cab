// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The cost cache: one calibrated cost file per model file and machine in the
// user's cache ($XDG_CACHE_HOME/batchscope/costs/, else
// ~/.cache/batchscope/costs/), so that every prediction made on a model
// (bench --target predict, tune, the Tuner panel, the adaptive strategy's
// planner, the model panel's curve) prices its batches with t(b) as the
// lanes ran it on this machine, and every live run of the model here
// refines it (calibrated(), weighted by batches).
//
// Key. What a cost depends on: the model (its file's SHA-256, or the
// synthetic model's formula), the device, and the machine facts the run
// history records (CPU, cores, host, kernel, allocator, GPUs and driver,
// LibTorch and its BLAS), which the caller gathers (app/cost_setup.h). The
// file is MODEL-ID.json, ID a hash of the key; the file holds the key
// itself ("made_for") and is checked against it when read.
//
// Refused, with a message naming the file and why (check_made_for): not a
// cost file; a version before 3 (no key: written before the cache); a file
// made for another model file (stale: the model changed since); one made on
// another machine or device (naming the facts that differ). A caller that
// finds one refused makes a new file; `--cost FILE` reads any cost file
// (from_file) and only notes where it was made.
//
// Writes go to a temporary file beside the old one, renamed over it, so a
// reader sees the old file or the new one whole; of two processes refining
// at once, the later rename wins and the other's refinement is lost.
// Thread-safety: free functions over files; CostKey is a value.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tuning/cost_model.h"
#include "tuning/step_cost.h"

namespace batchscope {

struct CostKey {
  std::string model;     // the model's name, for the file name ("mlp")
  std::string model_id;  // "sha256:HEX" of the model file, or "synthetic:A,C,L,J"
  std::string device;    // "cpu", "cuda:0"
  std::string machine;   // a JSON object: the machine facts

  // 16 hex digits, a hash of model_id, device and machine.
  std::string id() const;
  // {"model": ..., "model_id": ..., "device": ..., "machine": {...}}
  std::string json() const;
};

// $XDG_CACHE_HOME/batchscope/costs when XDG_CACHE_HOME is set and absolute,
// else $HOME/.cache/batchscope/costs; empty when neither is known.
std::string cost_cache_dir();
// DIR/MODEL-ID.json, MODEL reduced to letters, digits, '-', '_' and '.'.
std::string cost_cache_path(const CostKey& key, const std::string& dir);

// Ok when `file_text`'s "made_for" is `key`; else why not, for `path`:
// "PATH was made on another machine (host \"a\" here \"b\"; cpu ...)".
Status check_made_for(const std::string& file_text, const CostKey& key, const std::string& path);

// The cost kept at `path` for `key`, refused as above; nullopt when there is
// no file.
Expected<std::optional<CostModel>> read_cached_cost(const std::string& path, const CostKey& key);

// Writes `cost` for `key` at `path` (creating its folder), made_for and
// "written_at" (UTC) first.
Status write_cached_cost(const std::string& path, const CostKey& key, const CostModel& cost);

// A generative model's kept step cost (tuning/step_cost.h): the same key,
// at DIR/MODEL-ID-steps.json: "made_for" and "written_at", then what
// step_cost_json() writes ("kind": "generation-steps"), refused as above
// when read.
std::string step_cost_cache_path(const CostKey& key, const std::string& dir);
Expected<std::optional<StepCost>> read_cached_step_cost(const std::string& path,
                                                        const CostKey& key);
Status write_cached_step_cost(const std::string& path, const CostKey& key, const StepCost& cost);

// What a refinement did: each size the run saw, its median before and after.
struct CostMove {
  uint32_t batch = 0;
  uint64_t batches = 0;  // this run's batches of that size
  double was_us = 0, seen_us = 0, now_us = 0;
};
// And each part of the preprocess cost the run saw, its median per request.
struct PreprocessMove {
  uint32_t busy = 0;      // pool processes busy at once; 0: in a lane
  uint64_t requests = 0;  // this run's
  double was_us = 0, seen_us = 0, now_us = 0;
};
struct CostRefinement {
  uint32_t lanes = 1;
  double level = 0;  // the run's t(b) over the kept curve's (cost_drift.h); 0: none compared
  std::string busy;  // why the run refined nothing (it is kept as evidence); empty: it refined
  std::string held;  // why its move was held short; empty: it was not
  std::vector<CostMove> moves;
  uint64_t batches = 0;  // the run's batches that counted
  std::vector<PreprocessMove> preprocess;
};

// Reads the file at `path` for `key`, refines it with `observed` (t(b) as a
// live run with `lanes` lanes ran it, CostModel::from_run) dated now, keeps
// the run as evidence, and writes it back. A busy run (judge_run, with
// `others` what other processes used over it, null: not watched) is kept
// as evidence alone, `busy` saying why; a run that moved far is held to
// what the drift supports. nullopt when there is no file, or when the
// run's lanes prepared their own requests (CostModel::calibrated): a live
// run refines a cost that a prediction made, it does not start one.
Expected<std::optional<CostRefinement>> refine_cached_cost(const std::string& path,
                                                           const CostKey& key,
                                                           const CostModel& observed,
                                                           uint32_t lanes,
                                                           const CompetingLoad* others = nullptr);

// The same for the preprocess cost alone (a run whose t(b) cannot refine
// the file: its batches vary in length): the kept part refined by `seen`
// (PreprocessCost::refined). nullopt when there is no file, the file has no
// preprocess cost, or `seen` is empty.
Expected<std::optional<CostRefinement>> refine_cached_preprocess(const std::string& path,
                                                                 const CostKey& key,
                                                                 const PreprocessCost& seen);

// True when the cost's curve for `lanes` rests on live batches (calibrated).
bool calibrated_for(const CostModel& cost, uint32_t lanes);

// The current time, UTC, ISO 8601 with milliseconds ("2026-11-29T10:21:37.123Z").
std::string utc_now_ms();

}  // namespace batchscope
