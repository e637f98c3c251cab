// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/traffic_flags.h"

#include <fstream>
#include <sstream>
#include <type_traits>

#include "app/cli_args.h"
#include "common/file_text.h"
#include "traffic/llm_trace.h"

namespace batchscope {

namespace {

Expected<std::vector<std::pair<double, double>>> parse_steps(const std::string& text) {
  std::vector<std::pair<double, double>> steps;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      return invalid_argument(
          "--steps: expected RATE:SECONDS,... (for example 100:5,500:5), got '" + item + "'");
    }
    auto r = cli::parse_number("steps", item.substr(0, colon), 0, 1e9);
    if (!r) return r.error();
    auto s = cli::parse_number("steps", item.substr(colon + 1), 1e-6, 1e7);
    if (!s) return s.error();
    steps.emplace_back(*r, *s);
  }
  if (steps.empty()) return invalid_argument("--steps is empty");
  return steps;
}

}  // namespace

bool take_arrival_flag(const std::string& name, const std::string& value, ArrivalSpec& spec,
                       Status& bad) {
  constexpr double kAny = 1e12;  // validate() says what each pattern needs of them
  const cli::FlagField numbers[] = {
      cli::number("rate", -kAny, kAny, spec.rate),
      cli::number("rate-low", -kAny, kAny, spec.rate_low),
      cli::number("on", -kAny, kAny, spec.on_s),
      cli::number("off", -kAny, kAny, spec.off_s),
      cli::number("rate-from", -kAny, kAny, spec.rate_from),
      cli::number("rate-to", -kAny, kAny, spec.rate_to),
      cli::number("rate-min", -kAny, kAny, spec.rate_min),
      cli::number("rate-max", -kAny, kAny, spec.rate_max),
      cli::number("period", -kAny, kAny, spec.period_s),
      cli::number("trace-speed", 1e-9, 1e6, spec.trace_speed),
      cli::number("concurrency", 1, 1e6, spec.concurrency),
      cli::number("duration", -kAny, kAny, spec.duration_s),
      cli::number("requests", 1, kAny, spec.max_requests),
      cli::number("seed", 0, 1e18, spec.seed),
  };
  for (const cli::FlagField& f : numbers) {
    if (name != f.name) continue;
    bad = f.read(value);
    return true;
  }
  if (name == "pattern") {
    auto p = parse_pattern(value);
    if (!p) {
      bad = invalid_argument("--pattern: unknown pattern '" + value +
                             "'; known: constant, poisson, burst, ramp, step, sine, trace, closed");
    } else {
      spec.pattern = *p;
    }
  } else if (name == "steps") {
    auto st = parse_steps(value);
    if (!st)
      bad = st.error();
    else
      spec.steps = *st;
  } else if (name == "trace") {
    auto tr = load_llm_trace(value);
    if (!tr)
      bad = tr.error();
    else
      spec.trace = std::move(tr->at);
  } else {
    return false;
  }
  return true;
}

void trace_sets_pattern(const std::map<std::string, std::string>& flags, ArrivalSpec& spec) {
  if (flags.count("trace") && !flags.count("pattern")) spec.pattern = Pattern::kTrace;
}

bool take_gen_length_flag(const std::string& name, const std::string& value,
                          GenWorkloadSpec& lengths, ArrivalSpec& spec, Status& bad) {
  if (name == "trace") {
    auto t = load_llm_trace(value);
    if (!t) {
      bad = t.error();
    } else {
      spec.trace = std::move(t->at);
      lengths.trace_format = t->format;
      if (!t->lengths.empty()) lengths.replay = std::move(t->lengths);
    }
  } else if (name == "prompt-len" || name == "max-tokens") {
    auto d = LengthDist::parse(value, "--" + name);
    if (!d)
      bad = d.error();
    else
      (name == "prompt-len" ? lengths.prompt : lengths.max_tokens) = *d;
  } else if (name == "lengths-trace") {
    auto text = read_file_text(value);
    if (!text) {
      bad = invalid_argument("--lengths-trace: " + text.error().message);
      return true;
    }
    auto t = parse_lengths_csv(*text);
    if (!t)
      bad = t.error();
    else
      lengths.replay = std::move(*t);  // a trace's lengths, if any, are refused beside it
  } else {
    return false;
  }
  return true;
}

Status check_gen_lengths(const std::map<std::string, std::string>& flags,
                         const GenWorkloadSpec& lengths) {
  if (!lengths.from_trace()) return {};
  for (const char* flag : {"lengths-trace", "prompt-len", "max-tokens"}) {
    if (auto it = flags.find(flag); it != flags.end()) {
      return invalid_argument("--" + std::string(flag) + " " + it->second + ": the " +
                              lengths.trace_format + " trace --trace " + flags.at("trace") +
                              " gives each request's lengths");
    }
  }
  return {};
}

}  // namespace batchscope
