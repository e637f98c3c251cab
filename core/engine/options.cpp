#include "options.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "text_out.h"

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

namespace {

constexpr NumericOption kNumeric[] = {
    {"max_batch_size", 1, kMaxBatchSize, true}, {"max_wait_us", 0, 10'000'000, true},
    {"max_wait_ms", 0, 10'000, false},          {"queue_capacity", 1, 1u << 24, true},
    {"request_timeout_ms", 1, 3'600'000, true}, {"num_lanes", 1, 64, true},
    {"target_p99_ms", 0.01, 600'000, false},
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

std::span<const NumericOption> numeric_options() { return kNumeric; }

const NumericOption* find_numeric_option(std::string_view name) {
  for (const NumericOption& f : kNumeric) {
    if (name == f.name) return &f;
  }
  return nullptr;
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
  // In range, so every conversion below is exact or rounds a fraction.
  if (name == "max_batch_size") o.max_batch_size = static_cast<uint32_t>(value);
  if (name == "max_wait_us") o.max_wait_us = static_cast<int64_t>(value);
  if (name == "max_wait_ms") o.max_wait_us = std::llround(value * 1000.0);
  if (name == "queue_capacity") o.queue_capacity = static_cast<uint32_t>(value);
  if (name == "request_timeout_ms") o.request_timeout_ms = static_cast<int64_t>(value);
  if (name == "num_lanes") o.num_lanes = static_cast<uint32_t>(value);
  if (name == "target_p99_ms") o.target_p99_ms = value;
  return Status::Ok();
}

Status Options::validate() const {
  // Each field against its row of the table, quoting the field's own value.
  const std::pair<const char*, double> fields[] = {
      {"max_batch_size", static_cast<double>(max_batch_size)},
      {"max_wait_us", static_cast<double>(max_wait_us)},
      {"queue_capacity", static_cast<double>(queue_capacity)},
      {"request_timeout_ms", static_cast<double>(request_timeout_ms)},
      {"num_lanes", static_cast<double>(num_lanes)},
      {"target_p99_ms", target_p99_ms},
  };
  for (const auto& [name, value] : fields) {
    const NumericOption& f = *find_numeric_option(name);
    if (!(value >= f.lo && value <= f.hi)) return out_of_range(name, shortest(value), f);
  }
  if (strategy != StrategyKind::kFifo && strategy != StrategyKind::kAdaptive) {
    return invalid_argument("strategy = " + std::to_string(static_cast<int>(strategy)) +
                            " is unknown; allowed fifo, adaptive");
  }
  return Status::Ok();
}

std::string describe(const Options& o) {
  std::ostringstream s;
  s << "strategy=" << strategy_name(o.strategy) << " max_batch_size=" << o.max_batch_size
    << " max_wait_us=" << o.max_wait_us << " queue_capacity=" << o.queue_capacity
    << " request_timeout_ms=" << o.request_timeout_ms << " num_lanes=" << o.num_lanes;
  if (o.strategy == StrategyKind::kAdaptive) s << " target_p99_ms=" << o.target_p99_ms;
  return s.str();
}

}  // namespace batchscope
