// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The configurations `batchscope tune` searches, from its --space text:
//   "max_batch_size=1..256,max_wait_ms=0..20,strategy=fifo|adaptive,lanes=1..2"
// Each comma-separated entry is NAME=VALUES. NAME is any option of the
// numeric table (options.h: max_batch_size, max_wait_us or max_wait_ms,
// queue_capacity, request_timeout_ms, num_lanes or its alias lanes,
// target_p99_ms, max_num_seqs, max_num_batched_tokens), or strategy or
// scheduling. VALUES is one value, a list a|b|c, a range LO..HI, or an
// arithmetic grid LO..HI:STEP (LO, LO+STEP, ... up to HI; HI itself only when
// it falls on the grid). A range expands to concrete values:
//   - a whole-number option whose range holds at most 16 values: every value
//     (lanes=1..4 -> 1,2,3,4);
//   - max_wait_ms, max_wait_us and other fractional options (target_p99_ms):
//     LO (so 0 when the range starts there), HI, and between them at most 8
//     values of a 1-2-5 style series (the densest of 1-2-5, 1-1.5-2-3-5-7 and
//     1-1.2-1.5-2-2.5-3-4-5-6-8 per decade that fits in 8; thinned evenly
//     when even 1-2-5 has more), above HI/1000 when LO is 0
//     (max_wait_ms=0..20 -> 0,0.05,0.1,0.2,0.5,1,2,5,10,20);
//   - other whole-number options: LO, the powers of two between, and HI
//     (1..256 -> 1,2,4,...,256; 3..100 -> 3,4,8,16,32,64,100).
// Numeric values are sorted and duplicates dropped; strategy and scheduling
// values keep the order given. For requests of varying length,
// padding=longest|buckets|sorted, and length_buckets=32/64/128|64/256: each
// value a set of bucket limits, rising, joined by '/'. length_buckets acts
// only with padding=buckets: a combination with another padding and a
// length_buckets value other than the first is the same configuration as
// with the first (canonical()), and a search evaluates it once. Every value is range-checked
// against the options table, and a refusal names the entry and quotes it as sent.
//
// Combinations are enumerated in a fixed order, the last entry varying
// fastest, each applied on top of a base Options. A combination whose
// Options fail validate() (max_num_batched_tokens below max_num_seqs, say) is
// skipped and counted. Where an SLO is given, an adaptive combination's
// target_p99_ms is set to it (adaptive steers towards that target), unless
// the space itself searches target_p99_ms.
// Thread-safety: a plain value; const methods may run on several threads.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/options.h"
#include "common/status.h"

namespace batchscope {

// One searched option and its concrete values.
struct TuneDimension {
  enum class Kind : uint8_t { kNumeric, kStrategy, kScheduling, kPadding, kLengthBuckets };
  Kind kind = Kind::kNumeric;
  std::string name;   // the table's name: "num_lanes" (for lanes), "max_wait_ms", "strategy"
  std::string field;  // the Options field it sets: "num_lanes", "max_wait_us", "strategy"
  std::string entry;  // the entry as sent ("lanes=1..2"), for messages
  // Numeric: the values in the units `name` carries. Strategy and scheduling:
  // the enumerators' numeric values.
  std::vector<double> values;
  // Length buckets: value i is the index of its set here.
  std::vector<std::array<uint32_t, kMaxLengthBuckets>> bucket_sets;

  size_t size() const { return values.size(); }
  // Sets value `i` in `o`. The value was range-checked when it was parsed.
  void apply(Options& o, size_t i) const;
  // "32", "0.5", "adaptive".
  std::string value_text(size_t i) const;
};

// What an enumeration went through.
struct TuneEnumeration {
  uint64_t visited = 0;  // combinations handed to the callback
  uint64_t invalid = 0;  // combinations skipped because validate() refused them
  bool stopped = false;  // the callback asked to stop
};

class TuneSpace {
 public:
  // The entries of `text`, or kInvalidArgument naming the entry at fault.
  static Expected<TuneSpace> parse(std::string_view text);
  // "max_batch_size=1..256,max_wait_ms=0..20,strategy=fifo|adaptive,lanes=1..2"
  // with max_batch_size capped at `model_max_batch` (0: no cap beyond 256).
  static std::string default_text(uint32_t model_max_batch);
  static TuneSpace default_space(uint32_t model_max_batch);
  // The entries that search how requests of varying length are batched,
  // for lengths like `lengths` (a sample of the traffic's): every padding
  // policy, and three bucket sets: the powers of two from the 10th
  // percentile up, the quartiles, and the median alone (each ending at
  // the longest). Empty when `lengths` is.
  static std::string padding_text(std::span<const uint32_t> lengths);

  const std::vector<TuneDimension>& dimensions() const { return dims_; }
  // Combinations, saturating at UINT64_MAX; nothing is materialised.
  uint64_t size() const;
  // The expanded space, "max_batch_size=1|2|4,strategy=fifo|adaptive".
  std::string text() const;
  // Whether the space sets `field` ("num_lanes", "max_wait_us", ...).
  bool searches(std::string_view field) const;
  // `index` with every dimension that does nothing in its combination (on
  // top of `base`) set to its first value (length_buckets without padding=buckets), so that
  // equal configurations share one index.
  std::vector<size_t> canonical(std::span<const size_t> index, const Options& base) const;

  // The combination picking value index[d] of dimension d, on top of `base`;
  // with `slo_p99_ms`, adaptive combinations get it as target_p99_ms. Not
  // validated. index.size() must equal dimensions().size().
  Options combination(std::span<const size_t> index, const Options& base,
                      std::optional<double> slo_p99_ms = std::nullopt) const;

  // Calls `visit` with every valid combination in order. `visit` returns
  // void, or bool where false stops the enumeration.
  template <class F>
  TuneEnumeration for_each(const Options& base, F&& visit,
                           std::optional<double> slo_p99_ms = std::nullopt) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Options&>>) {
      return for_each_until(
          base,
          [&visit](const Options& o) {
            visit(o);
            return true;
          },
          slo_p99_ms);
    } else {
      return for_each_until(base, std::function<bool(const Options&)>(std::forward<F>(visit)),
                            slo_p99_ms);
    }
  }
  TuneEnumeration for_each_until(const Options& base,
                                 const std::function<bool(const Options&)>& visit,
                                 std::optional<double> slo_p99_ms = std::nullopt) const;

 private:
  std::vector<TuneDimension> dims_;
};

}  // namespace batchscope
