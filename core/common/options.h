// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The batching options a user tunes. A full value is validated and swapped in
// as a whole; the engine reports the options in force with a version number.
// Thread-safety: a plain value.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace batchscope {

enum class StrategyKind : uint8_t {
  kFifo,      // cut when max_batch_size requests wait, or when the head has waited max_wait
  kAdaptive,  // like fifo, with cap and wait tuned live against target_p99_ms
};

const char* strategy_name(StrategyKind kind);
std::optional<StrategyKind> parse_strategy(std::string_view name);

// How a generative model's sequences are batched (generation only).
enum class Scheduling : uint8_t {
  kContinuous,  // the batch is re-formed every step: finished sequences leave, waiting ones join
  kStatic,      // a batch is admitted, prefilled together, and runs until all of it finishes
};

const char* scheduling_name(Scheduling s);
std::optional<Scheduling> parse_scheduling(std::string_view name);

// How requests of varying length (a text model's tokens) are batched; each
// batch is padded to its longest request.
enum class Padding : uint8_t {
  kLongest,  // first come first batched, padded to the longest
  kBuckets,  // a batch holds one length bucket; each bucket waits and fills on its own
  kSorted,   // the oldest request and the queued ones nearest its length
};

const char* padding_name(Padding p);
std::optional<Padding> parse_padding(std::string_view name);

inline constexpr size_t kMaxLengthBuckets = 8;

struct Options {
  // Largest batch handed to the model. Range 1..kMaxBatchSize.
  uint32_t max_batch_size = 32;
  // Longest the oldest queued request waits for a batch to fill, in
  // microseconds. 0 dispatches whatever is queued as soon as a lane is free.
  // Range 0..10,000,000 (10 s).
  int64_t max_wait_us = 2000;
  // Requests admitted but not yet dispatched; beyond it submit() answers
  // kQueueFull at once. Range 1..16,777,216.
  uint32_t queue_capacity = 1024;
  // A queued request not dispatched within this many milliseconds of its
  // arrival fails with kTimedOut and never reaches the model. Range 1..3,600,000.
  int64_t request_timeout_ms = 30000;
  // Runner lanes, each with its own model instance and thread. Range 1..64.
  uint32_t num_lanes = 1;
  // A Python model with preprocess only: the processes that run it on each
  // request as it arrives, ahead of the batcher; 0 runs it on the lane, on
  // each request of the batch before predict. Range 0..64.
  uint32_t preprocess_workers = 1;
  StrategyKind strategy = StrategyKind::kFifo;
  // Adaptive strategy only: the end-to-end p99 latency it steers towards, in
  // milliseconds. Range 0.01..600,000.
  double target_p99_ms = 50.0;

  // Generation only (a generative model), where queue_capacity bounds the
  // waiting sequences, request_timeout_ms a request's whole life, and
  // max_wait_us how long a static batch waits to fill.
  Scheduling scheduling = Scheduling::kContinuous;
  // Sequences running at once (vLLM's max_num_seqs). Range 1..4096.
  uint32_t max_num_seqs = 32;
  // Tokens one step processes: a decode counts one, a prefill chunk its
  // length (vLLM's max_num_batched_tokens). At least max_num_seqs, so every
  // running sequence decodes every step. Range 1..1,048,576.
  uint32_t max_num_batched_tokens = 512;
  // Continuous scheduling: a prompt longer than the budget left is prefilled
  // in chunks beside the decodes (vLLM's enable_chunked_prefill). Off, a
  // step either prefills whole waiting prompts (and nothing else) or
  // decodes, as vLLM's scheduler without it; a prompt must then fit one
  // step (a tune refuses a budget below the context), and one that does not
  // is prefilled alone in chunks. 0 or 1 where a number is read.
  bool chunked_prefill = true;

  // Requests of varying length only (lengths are 0 otherwise, and every
  // policy batches first come first served).
  Padding padding = Padding::kLongest;
  // buckets: the buckets' largest lengths, rising, 0 after the last; a
  // request longer than the last has a bucket of its own beyond it.
  std::array<uint32_t, kMaxLengthBuckets> length_buckets{32, 64, 128, 256};

  // Ok, or kInvalidArgument naming the field, its value and the allowed range.
  Status validate() const;
  bool operator==(const Options&) const = default;
};

inline constexpr uint32_t kMaxBatchSize = 4096;

// The numeric options by name with their allowed ranges, in the units their
// names carry. One table serves validate(), the JSON reader and the command
// line, so a value from outside is range-checked as a double before it is
// converted to its field's type (a double out of an integer's range converts
// to garbage), and every message quotes the value as it was given.
struct NumericOption {
  const char* name;  // "max_batch_size"; "max_wait_ms" is max_wait_us in milliseconds
  double lo;
  double hi;
  bool whole;  // integers only
  double (*get)(const Options&);
  void (*set)(Options&, double);  // the value in range (and whole where it must be)
  bool alias;                     // another name for a field that has a row of its own
};
const NumericOption* find_numeric_option(std::string_view name);
// "max_batch_size, max_wait_us (or max_wait_ms), ...", for messages.
std::string numeric_option_names();

// Checks `value` against the option `name` (a whole number where it must be
// one, within range) and sets it. The error reads "LABEL = SHOWN is out of
// range; allowed LO to HI", LABEL being `label` or else the name, and SHOWN
// the value as the caller received it (the flag's text, the JSON number).
Status set_numeric_option(Options& o, std::string_view name, double value, std::string_view shown,
                          std::string_view label = {});

// The options as a JSON object (no surrounding whitespace), every field by
// its name; options_from_json() (core/api) reads it back.
std::string options_to_json(const Options& o);

// The bucket a request of `length` falls in: the first whose largest length
// holds it, or the one beyond the last.
size_t length_bucket(const Options& o, uint32_t length);
// "32,64,128,256", and back (1 to kMaxLengthBuckets rising whole numbers;
// the error quotes the text).
std::string length_buckets_text(const Options& o);
Status parse_length_buckets(std::string_view text, Options& o);

// "max_batch_size=32 max_wait_us=2000 ..." for logs and summaries.
std::string describe(const Options& o);
// "scheduling=continuous max_num_seqs=32 ..." for a generative model's runs.
std::string describe_generation(const Options& o);

}  // namespace batchscope
