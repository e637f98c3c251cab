// SPDX-License-Identifier: GPL-3.0-or-later
#include "common/options.h"

#include <cmath>
#include <sstream>
#include <type_traits>

#include "common/text_out.h"

namespace batchscope {

const char* strategy_name(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kFifo: return "fifo";
    case StrategyKind::kAdaptive: return "adaptive";
  }
  return "?";
}

std::optional<StrategyKind> parse_strategy(std::string_view name) {
  if (name == "fifo") return StrategyKind::kFifo;
  if (name == "adaptive") return StrategyKind::kAdaptive;
  return std::nullopt;
}

const char* scheduling_name(Scheduling s) {
  switch (s) {
    case Scheduling::kContinuous: return "continuous";
    case Scheduling::kStatic: return "static";
  }
  return "?";
}

std::optional<Scheduling> parse_scheduling(std::string_view name) {
  if (name == "continuous") return Scheduling::kContinuous;
  if (name == "static") return Scheduling::kStatic;
  return std::nullopt;
}

const char* padding_name(Padding p) {
  switch (p) {
    case Padding::kLongest: return "longest";
    case Padding::kBuckets: return "buckets";
    case Padding::kSorted: return "sorted";
  }
  return "?";
}

std::optional<Padding> parse_padding(std::string_view name) {
  if (name == "longest") return Padding::kLongest;
  if (name == "buckets") return Padding::kBuckets;
  if (name == "sorted") return Padding::kSorted;
  return std::nullopt;
}

size_t length_bucket(const Options& o, uint32_t length) {
  size_t k = 0;
  while (k < kMaxLengthBuckets && o.length_buckets[k] != 0 && length > o.length_buckets[k]) ++k;
  return k;
}

std::string length_buckets_text(const Options& o) {
  std::string out;
  for (uint32_t b : o.length_buckets) {
    if (b == 0) break;
    out += (out.empty() ? "" : ",") + std::to_string(b);
  }
  return out;
}

Status parse_length_buckets(std::string_view text, Options& o) {
  std::array<uint32_t, kMaxLengthBuckets> got{};
  size_t n = 0;
  std::string part;
  const auto bad = [&text](const std::string& why) {
    return invalid_argument("length_buckets '" + std::string(text) + "': " + why);
  };
  const auto take = [&]() -> Status {
    if (part.empty() || part.size() > 9 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return bad("each bucket is a whole length from 1");
    const auto v = static_cast<uint32_t>(std::stoul(part));
    if (v == 0) return bad("each bucket is a whole length from 1");
    if (n == kMaxLengthBuckets)
      return bad("at most " + std::to_string(kMaxLengthBuckets) + " buckets");
    if (n > 0 && v <= got[n - 1]) return bad("the lengths must rise");
    got[n++] = v;
    part.clear();
    return Status::Ok();
  };
  for (char c : text) {
    if (c == ' ') continue;
    if (c == ',') {
      if (Status s = take(); !s) return s;
    } else {
      part += c;
    }
  }
  if (Status s = take(); !s) return s;
  o.length_buckets = got;
  return Status::Ok();
}

namespace {

// The field of each row, read and written as a double: the one place that
// converts between the wire's numbers and Options' types.
template <class T, T Options::*F>
constexpr NumericOption row(const char* name, double lo, double hi) {
  return {name,
          lo,
          hi,
          std::is_integral_v<T>,
          [](const Options& o) { return static_cast<double>(o.*F); },
          [](Options& o, double v) { o.*F = static_cast<T>(v); },
          false};
}

constexpr NumericOption kNumeric[] = {
    row<uint32_t, &Options::max_batch_size>("max_batch_size", 1, kMaxBatchSize),
    row<int64_t, &Options::max_wait_us>("max_wait_us", 0, 10'000'000),
    {"max_wait_ms", 0, 10'000, false, [](const Options& o) { return o.max_wait_us / 1000.0; },
     [](Options& o, double v) { o.max_wait_us = std::llround(v * 1000.0); }, true},
    row<uint32_t, &Options::queue_capacity>("queue_capacity", 1, 1u << 24),
    row<int64_t, &Options::request_timeout_ms>("request_timeout_ms", 1, 3'600'000),
    row<uint32_t, &Options::num_lanes>("num_lanes", 1, 64),
    row<uint32_t, &Options::preprocess_workers>("preprocess_workers", 0, 64),
    row<double, &Options::target_p99_ms>("target_p99_ms", 0.01, 600'000),
    row<uint32_t, &Options::max_num_seqs>("max_num_seqs", 1, 4096),
    row<uint32_t, &Options::max_num_batched_tokens>("max_num_batched_tokens", 1, 1u << 20),
    row<bool, &Options::chunked_prefill>("chunked_prefill", 0, 1),
};

std::string shortest(double v) {
  std::string s;
  append_number(s, v, v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
  return s;
}

// A range's ends read plainly: 10000000, not 1e+07.
std::string bound(double v) {
  if (v != std::floor(v)) return shortest(v);
  return std::to_string(static_cast<int64_t>(v));
}

Error out_of_range(std::string_view label, std::string_view shown, const NumericOption& f) {
  return invalid_argument(std::string(label) + " = " + std::string(shown) +
                          " is out of range; allowed " + bound(f.lo) + " to " + bound(f.hi));
}

}  // namespace

const NumericOption* find_numeric_option(std::string_view name) {
  for (const NumericOption& f : kNumeric) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string numeric_option_names() {
  std::string out;
  for (const NumericOption& f : kNumeric) {
    out += f.alias ? std::string(" (or ") + f.name + ")"
                   : (out.empty() ? "" : ", ") + std::string(f.name);
  }
  return out;
}

Status set_numeric_option(Options& o, std::string_view name, double value, std::string_view shown,
                          std::string_view label) {
  const NumericOption* f = find_numeric_option(name);
  if (!f) return invalid_argument("unknown option '" + std::string(name) + "'");
  if (label.empty()) label = name;
  // NaN fails both comparisons, so it is refused here too.
  if (!(value >= f->lo && value <= f->hi)) return out_of_range(label, shown, *f);
  if (f->whole && value != std::floor(value)) {
    return invalid_argument(std::string(label) + " must be a whole number, got " +
                            std::string(shown));
  }
  f->set(o, value);  // in range, so the conversion is exact or rounds a fraction
  return Status::Ok();
}

Status Options::validate() const {
  for (const NumericOption& f : kNumeric) {
    if (f.alias) continue;
    const double value = f.get(*this);
    if (!(value >= f.lo && value <= f.hi)) return out_of_range(f.name, shortest(value), f);
  }
  if (strategy != StrategyKind::kFifo && strategy != StrategyKind::kAdaptive) {
    return invalid_argument("strategy = " + std::to_string(static_cast<int>(strategy)) +
                            " is unknown; allowed fifo, adaptive");
  }
  if (scheduling != Scheduling::kContinuous && scheduling != Scheduling::kStatic) {
    return invalid_argument("scheduling = " + std::to_string(static_cast<int>(scheduling)) +
                            " is unknown; allowed continuous, static");
  }
  if (padding != Padding::kLongest && padding != Padding::kBuckets && padding != Padding::kSorted) {
    return invalid_argument("padding = " + std::to_string(static_cast<int>(padding)) +
                            " is unknown; allowed longest, buckets, sorted");
  }
  if (length_buckets[0] == 0) {
    return invalid_argument("length_buckets is empty; give at least one length");
  }
  for (size_t k = 1; k < kMaxLengthBuckets && length_buckets[k] != 0; ++k) {
    if (length_buckets[k] <= length_buckets[k - 1]) {
      return invalid_argument("length_buckets = " + length_buckets_text(*this) + " must rise");
    }
  }
  if (max_num_batched_tokens < max_num_seqs) {
    return invalid_argument("max_num_batched_tokens = " + std::to_string(max_num_batched_tokens) +
                            " is less than max_num_seqs = " + std::to_string(max_num_seqs) +
                            "; every running sequence decodes one token per step");
  }
  return Status::Ok();
}

std::string options_to_json(const Options& o) {
  std::string out = "{\"strategy\":";
  append_json_string(out, strategy_name(o.strategy));
  out += ",\"max_batch_size\":" + std::to_string(o.max_batch_size);
  out += ",\"max_wait_us\":" + std::to_string(o.max_wait_us);
  out += ",\"queue_capacity\":" + std::to_string(o.queue_capacity);
  out += ",\"request_timeout_ms\":" + std::to_string(o.request_timeout_ms);
  out += ",\"num_lanes\":" + std::to_string(o.num_lanes);
  out += ",\"preprocess_workers\":" + std::to_string(o.preprocess_workers);
  out += ",\"target_p99_ms\":";
  append_json_number(out, o.target_p99_ms);
  out += ",\"scheduling\":";
  append_json_string(out, scheduling_name(o.scheduling));
  out += ",\"max_num_seqs\":" + std::to_string(o.max_num_seqs);
  out += ",\"max_num_batched_tokens\":" + std::to_string(o.max_num_batched_tokens);
  out += o.chunked_prefill ? ",\"chunked_prefill\":true" : ",\"chunked_prefill\":false";
  out += ",\"padding\":";
  append_json_string(out, padding_name(o.padding));
  out += ",\"length_buckets\":[" + length_buckets_text(o) + "]";
  return out + "}";
}

std::string describe(const Options& o) {
  std::ostringstream s;
  s << "strategy=" << strategy_name(o.strategy) << " max_batch_size=" << o.max_batch_size
    << " max_wait_us=" << o.max_wait_us << " queue_capacity=" << o.queue_capacity
    << " request_timeout_ms=" << o.request_timeout_ms << " num_lanes=" << o.num_lanes;
  if (o.preprocess_workers != 1) s << " preprocess_workers=" << o.preprocess_workers;
  if (o.strategy == StrategyKind::kAdaptive) s << " target_p99_ms=" << o.target_p99_ms;
  if (o.padding != Padding::kLongest) s << " padding=" << padding_name(o.padding);
  if (o.padding == Padding::kBuckets) s << " length_buckets=" << length_buckets_text(o);
  return s.str();
}

std::string describe_generation(const Options& o) {
  std::ostringstream s;
  s << "scheduling=" << scheduling_name(o.scheduling) << " max_num_seqs=" << o.max_num_seqs
    << " max_num_batched_tokens=" << o.max_num_batched_tokens;
  if (!o.chunked_prefill) s << " chunked_prefill=off";
  if (o.scheduling == Scheduling::kStatic) s << " max_wait_us=" << o.max_wait_us;
  s << " queue_capacity=" << o.queue_capacity << " request_timeout_ms=" << o.request_timeout_ms;
  if (o.num_lanes > 1) s << " num_lanes=" << o.num_lanes;
  return s.str();
}

}  // namespace batchscope
