#include "options.h"

#include <cmath>
#include <sstream>

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

template <class T>
std::optional<Error> check_range(const char* field, T value, T lo, T hi) {
  if (value >= lo && value <= hi) return std::nullopt;
  std::ostringstream m;
  m << field << " = " << value << " is out of range; allowed " << lo << " to " << hi;
  return invalid_argument(m.str());
}

}  // namespace

Status Options::validate() const {
  if (auto e = check_range<uint32_t>("max_batch_size", max_batch_size, 1, kMaxBatchSize)) return *e;
  if (auto e = check_range<int64_t>("max_wait_us", max_wait_us, 0, 10'000'000)) return *e;
  if (auto e = check_range<uint32_t>("queue_capacity", queue_capacity, 1, 1u << 24)) return *e;
  if (auto e = check_range<int64_t>("request_timeout_ms", request_timeout_ms, 1, 3'600'000))
    return *e;
  if (auto e = check_range<uint32_t>("num_lanes", num_lanes, 1, 64)) return *e;
  if (strategy != StrategyKind::kFifo && strategy != StrategyKind::kAdaptive) {
    return invalid_argument("strategy = " + std::to_string(static_cast<int>(strategy)) +
                            " is unknown; allowed fifo, adaptive");
  }
  if (!std::isfinite(target_p99_ms)) {
    return invalid_argument("target_p99_ms is not a finite number; allowed 0.01 to 600000");
  }
  if (auto e = check_range<double>("target_p99_ms", target_p99_ms, 0.01, 600000.0)) return *e;
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
