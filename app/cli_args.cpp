// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli_args.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
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
    // A flag that may be given again keeps every value, one a line.
    if (name == "model-option" && out.count(name)) {
      out[name] += "\n" + value;
    } else {
      out[name] = value;
    }
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

FlagField whole(const char* name, double lo, double hi, int& field) {
  return {name, [name, lo, hi, &field](const std::string& value) -> Status {
            auto v = parse_number(name, value, lo, hi);
            if (!v) return v.error();
            if (*v != std::floor(*v)) {
              return invalid_argument("--" + std::string(name) + " must be a whole number, got '" +
                                      value + "'");
            }
            field = static_cast<int>(*v);
            return Status::Ok();
          }};
}

Status take_fields(std::map<std::string, std::string>& flags,
                   std::initializer_list<FlagField> fields) {
  for (const FlagField& f : fields) {
    auto it = flags.find(f.name);
    if (it == flags.end()) continue;
    if (Status s = f.read(it->second); !s) return s;
    flags.erase(it);
  }
  return Status::Ok();
}

Status no_flags_left(const std::map<std::string, std::string>& flags, const std::string& command) {
  if (flags.empty()) return Status::Ok();
  return invalid_argument("unknown option --" + flags.begin()->first + " (see batchscope " +
                          command + " --help)");
}

Expected<size_t> parse_max_connections(const std::string& text) {
  rlimit l{};
  const double most = getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur != RLIM_INFINITY
                          ? static_cast<double>(l.rlim_cur)
                          : 1e9;
  auto v = parse_number("max-connections", text, -std::numeric_limits<double>::max(),
                        std::numeric_limits<double>::max());
  if (!v) return v.error();
  if (*v != std::floor(*v)) {
    return invalid_argument("--max-connections: expected a whole number, got '" + text + "'");
  }
  if (*v < 1) {
    return invalid_argument("--max-connections = " + text + " is out of range; allowed 1 to " +
                            std::to_string(static_cast<uint64_t>(most)) +
                            " (the descriptor limit, ulimit -n)");
  }
  if (*v > most) {
    return invalid_argument("--max-connections = " + text +
                            " is more than this process may open: its descriptor limit (ulimit "
                            "-n) is " +
                            std::to_string(static_cast<uint64_t>(most)));
  }
  return static_cast<size_t>(*v);
}

FlagField max_connections(size_t& field) {
  return {"max-connections", [&field](const std::string& v) -> Status {
            auto n = parse_max_connections(v);
            if (!n) return n.error();
            field = *n;
            return Status::Ok();
          }};
}

Expected<std::vector<uint32_t>> parse_counts(const std::string& flag, const std::string& text,
                                             double lo, double hi) {
  std::vector<uint32_t> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    auto v = parse_number(flag, item, lo, hi);
    if (!v) return v.error();
    if (*v != std::floor(*v))
      return invalid_argument("--" + flag + ": expected whole numbers, got '" + item + "'");
    out.push_back(static_cast<uint32_t>(*v));
  }
  if (out.empty()) return invalid_argument("--" + flag + " is empty");
  return out;
}

namespace {

// --NAME parsed by `parse` into `field`, removed from `flags`; the error
// quotes the value and lists `allowed`.
template <class T, class Parse>
Status take_choice(std::map<std::string, std::string>& flags, const char* name, const char* what,
                   const char* allowed, Parse parse, T& field) {
  auto it = flags.find(name);
  if (it == flags.end()) return Status::Ok();
  auto v = parse(it->second);
  if (!v) {
    return invalid_argument("--" + std::string(name) + ": unknown " + what + " '" + it->second +
                            "'; allowed " + allowed);
  }
  field = *v;
  flags.erase(it);
  return Status::Ok();
}

}  // namespace

Expected<Options> take_options(std::map<std::string, std::string>& flags, Options o) {
  // Each flag is range-checked as written, before it is converted to its
  // field, so that "--max-batch-size 99999999999" is quoted back as given.
  struct Flag {
    const char* flag;
    const char* option;
  };
  constexpr Flag kFlags[] = {
      {"max-batch-size", "max_batch_size"},
      {"max-wait-ms", "max_wait_ms"},
      {"queue-capacity", "queue_capacity"},
      {"timeout-ms", "request_timeout_ms"},
      {"lanes", "num_lanes"},
      {"preprocess-workers", "preprocess_workers"},
      {"target-p99-ms", "target_p99_ms"},
      {"max-num-seqs", "max_num_seqs"},
      {"max-num-batched-tokens", "max_num_batched_tokens"},
  };
  for (const Flag& f : kFlags) {
    auto it = flags.find(f.flag);
    if (it == flags.end()) continue;
    const std::string text = it->second;
    flags.erase(it);
    const bool whole = find_numeric_option(f.option)->whole;
    double v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec == std::errc::result_out_of_range) v = text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    if ((ec != std::errc() && ec != std::errc::result_out_of_range) || p != end) {
      return invalid_argument("--" + std::string(f.flag) + ": expected " +
                              (whole ? "a whole number" : "a number") + ", got '" + text + "'");
    }
    if (Status s = set_numeric_option(o, f.option, v, text, "--" + std::string(f.flag)); !s)
      return s.error();
  }
  if (Status s =
          take_choice(flags, "strategy", "strategy", "fifo, adaptive", parse_strategy, o.strategy);
      !s) {
    return s.error();
  }
  if (Status s = take_choice(flags, "padding", "policy", "longest, buckets, sorted", parse_padding,
                             o.padding);
      !s) {
    return s.error();
  }
  if (auto it = flags.find("length-buckets"); it != flags.end()) {
    if (Status s = parse_length_buckets(it->second, o); !s)
      return invalid_argument("--" + s.message());
    flags.erase(it);
  }
  if (Status s = take_choice(flags, "scheduling", "scheduling", "continuous, static",
                             parse_scheduling, o.scheduling);
      !s) {
    return s.error();
  }
  if (Status s = o.validate(); !s) return s.error();
  return o;
}

std::string options_help() {
  return "  --strategy fifo|adaptive  batch formation strategy (default fifo)\n"
         "  --padding longest|buckets|sorted  how requests of varying length are batched\n"
         "                            (a text model's): padded to the longest as they come,\n"
         "                            one length bucket a batch, or the oldest with those\n"
         "                            nearest its length (default longest)\n"
         "  --length-buckets L1,L2,...  the buckets' largest lengths, rising, at most 8\n"
         "                            (default 32,64,128,256; longer: a bucket beyond)\n"
         "  --max-batch-size N        largest batch, 1..4096 (default 32, or the model's\n"
         "                            max_batch_size where that is lower)\n"
         "  --max-wait-ms X           longest the oldest request waits for a batch to fill,\n"
         "                            0..10000 (default 2)\n"
         "  --queue-capacity N        requests queued before new ones are refused (default 1024)\n"
         "  --timeout-ms N            a request still queued after this fails (default 30000)\n"
         "  --lanes N                 runner lanes, each with its own model instance (default 1)\n"
         "  --target-p99-ms X         adaptive strategy's p99 latency target (default 50)\n"
         "Generative models (max-wait-ms is a static batch's wait to fill; timeout-ms a\n"
         "request's whole life):\n"
         "  --scheduling continuous|static  iteration-level or request-level (default continuous)\n"
         "  --max-num-seqs N          sequences running at once (default 32)\n"
         "  --max-num-batched-tokens N  tokens per step, prefill chunks and decodes (default "
         "512)\n";
}

}  // namespace batchscope::cli
