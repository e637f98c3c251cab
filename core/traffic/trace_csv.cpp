// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/trace_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "common/text_out.h"

namespace batchscope {

namespace {

std::string_view trim_cell(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::optional<double> parse_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Error line_error(size_t line, const std::string& what) {
  return invalid_argument("trace line " + std::to_string(line) + ": " + what);
}

// Largest accepted offset: 1e15 us (~31 years), far inside int64 nanoseconds.
constexpr double kMaxTraceUs = 1e15;

}  // namespace

Expected<std::vector<Duration>> parse_trace_csv(std::string_view text) {
  enum class Kind { kUnknown, kTimestamps, kGaps };
  Kind kind = Kind::kUnknown;
  std::vector<double> values;
  std::vector<size_t> lines;  // source line of each value, for errors found later
  bool seen_first = false;
  size_t line = 0;
  while (!text.empty()) {
    ++line;
    const size_t nl = text.find('\n');
    std::string_view row = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    row = trim_cell(row);
    if (row.empty()) continue;
    const std::string_view cell = trim_cell(row.substr(0, row.find(',')));
    std::optional<double> v = parse_number(cell);
    if (!seen_first) {
      seen_first = true;
      if (!v) {
        // A header: only two names change the meaning of the column.
        if (cell == "timestamp_us") kind = Kind::kTimestamps;
        if (cell == "interarrival_us") kind = Kind::kGaps;
        continue;
      }
    }
    if (!v) return line_error(line, "'" + std::string(cell) + "' is not a number");
    if (!std::isfinite(*v) || *v < 0 || *v > kMaxTraceUs) {
      return line_error(line, std::string(cell) + " is out of range; allowed 0 to " +
                                  message_number(kMaxTraceUs) + " us");
    }
    if (kind == Kind::kTimestamps && !values.empty() && *v < values.back()) {
      return line_error(line, "timestamp " + std::string(cell) + " us is before the previous " +
                                  message_number(values.back()) + " us");
    }
    values.push_back(*v);
    lines.push_back(line);
  }
  if (values.empty()) return invalid_argument("trace has no arrivals");
  if (kind == Kind::kUnknown) {
    kind = std::is_sorted(values.begin(), values.end()) ? Kind::kTimestamps : Kind::kGaps;
  }

  std::vector<Duration> out;
  out.reserve(values.size());
  double sum_us = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    double at_us = values[i];
    if (kind == Kind::kGaps) {
      sum_us += values[i];
      at_us = sum_us;
      if (at_us > kMaxTraceUs) {
        return line_error(lines[i], "the offset reaches " + message_number(at_us) +
                                        " us; allowed up to " + message_number(kMaxTraceUs) +
                                        " us");
      }
    }
    // Rounded per value (not summed in ns) so offsets stay non-decreasing.
    out.emplace_back(std::llround(at_us * 1000.0));
  }
  return out;
}

}  // namespace batchscope
