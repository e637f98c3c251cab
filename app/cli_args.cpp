#include "cli_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace batchscope::cli {

Expected<std::map<std::string, std::string>> parse_flags(const std::vector<std::string>& args,
                                                         const std::vector<std::string>& switches) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() < 3) {
      return invalid_argument("unexpected argument '" + a + "'");
    }
    std::string name = a.substr(2);
    std::string value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
      value = "1";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return invalid_argument("--" + name + " needs a value");
    }
    out[name] = value;
  }
  return out;
}

Expected<double> parse_number(const std::string& flag, const std::string& text, double lo,
                              double hi) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v)) {
    return invalid_argument("--" + flag + ": expected a number, got '" + text + "'");
  }
  if (v < lo || v > hi) {
    std::ostringstream m;
    m << "--" << flag << " = " << text << " is out of range; allowed " << lo << " to " << hi;
    return invalid_argument(m.str());
  }
  return v;
}

namespace {

Expected<int64_t> parse_int(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end) {
    return invalid_argument("--" + flag + ": expected a whole number, got '" + text + "'");
  }
  return v;
}

}  // namespace

Expected<Options> take_options(std::map<std::string, std::string>& flags, Options o) {
  auto take = [&](const char* name) -> std::optional<std::string> {
    auto it = flags.find(name);
    if (it == flags.end()) return std::nullopt;
    std::string v = it->second;
    flags.erase(it);
    return v;
  };
  // Range checks are Options::validate()'s; here only the syntax. Values that
  // do not fit the field are clamped so validate() reports them as out of range.
  auto as_u32 = [](int64_t v) {
    return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, int64_t{UINT32_MAX}));
  };
  if (auto v = take("max-batch-size")) {
    auto n = parse_int("max-batch-size", *v);
    if (!n) return n.error();
    o.max_batch_size = as_u32(*n);
  }
  if (auto v = take("max-wait-ms")) {
    auto x = parse_number("max-wait-ms", *v, -1e12, 1e12);
    if (!x) return x.error();
    o.max_wait_us = static_cast<int64_t>(std::llround(*x * 1000.0));
  }
  if (auto v = take("queue-capacity")) {
    auto n = parse_int("queue-capacity", *v);
    if (!n) return n.error();
    o.queue_capacity = as_u32(*n);
  }
  if (auto v = take("timeout-ms")) {
    auto n = parse_int("timeout-ms", *v);
    if (!n) return n.error();
    o.request_timeout_ms = *n;
  }
  if (auto v = take("lanes")) {
    auto n = parse_int("lanes", *v);
    if (!n) return n.error();
    o.num_lanes = as_u32(*n);
  }
  if (auto v = take("strategy")) {
    auto s = parse_strategy(*v);
    if (!s)
      return invalid_argument("--strategy: unknown strategy '" + *v + "'; allowed fifo, adaptive");
    o.strategy = *s;
  }
  if (auto v = take("target-p99-ms")) {
    auto x = parse_number("target-p99-ms", *v, -1e12, 1e12);
    if (!x) return x.error();
    o.target_p99_ms = *x;
  }
  if (Status s = o.validate(); !s) return s.error();
  return o;
}

Expected<SyntheticCost> parse_synthetic(const std::string& text) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t comma; (comma = text.find(',', from)) != std::string::npos; from = comma + 1) {
    parts.push_back(text.substr(from, comma - from));
  }
  parts.push_back(text.substr(from));
  if (parts.size() < 2 || parts.size() > 3) {
    return invalid_argument(
        "--synthetic: expected A_US,C_US or A_US,C_US,L_US (for example 500,20), got '" + text +
        "'");
  }
  double v[3] = {0, 0, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto x = parse_number("synthetic", parts[i], 0, 1e7);
    if (!x) return x.error();
    v[i] = *x;
  }
  SyntheticCost cost;
  cost.fixed_us = v[0];
  cost.per_item_us = v[1];
  cost.log_us = v[2];
  return cost;
}

std::string options_help() {
  return "  --strategy fifo|adaptive  batch formation strategy (default fifo)\n"
         "  --max-batch-size N        largest batch, 1..4096 (default 32)\n"
         "  --max-wait-ms X           longest the oldest request waits for a batch to fill,\n"
         "                            0..10000 (default 2)\n"
         "  --queue-capacity N        requests queued before new ones are refused (default 1024)\n"
         "  --timeout-ms N            a request still queued after this fails (default 30000)\n"
         "  --lanes N                 runner lanes, each with its own model instance (default 1)\n"
         "  --target-p99-ms X         adaptive strategy's p99 latency target (default 50)\n";
}

}  // namespace batchscope::cli
