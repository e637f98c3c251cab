// SPDX-License-Identifier: GPL-3.0-or-later
#include "traffic/llm_trace.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/text_out.h"
#include "traffic/trace_csv.h"

namespace batchscope {

namespace {

constexpr double kMaxLength = 1e8;   // tokens in one prompt or output
constexpr double kMaxOffsetS = 1e9;  // ~31 years, as trace_csv.h's limit
constexpr size_t kMaxQuoted = 40;    // characters of a cell an error quotes

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string quote(std::string_view s) {
  if (s.size() > kMaxQuoted) return "'" + std::string(s.substr(0, kMaxQuoted)) + "...'";
  return "'" + std::string(s) + "'";
}

Error at_line(size_t line, const std::string& what) {
  return invalid_argument("trace line " + std::to_string(line) + ": " + what);
}

// Cells of one CSV row; a cell in double quotes may hold commas ("" is a quote).
std::vector<std::string> split_csv(std::string_view row) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < row.size(); ++i) {
    const char c = row[i];
    if (quoted) {
      if (c == '"' && i + 1 < row.size() && row[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  for (std::string& cell : cells) cell = std::string(trim(cell));
  return cells;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// Whole digits at s[i..i+n) as a number, or -1.
int digits(std::string_view s, size_t i, size_t n) {
  if (i + n > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + n; ++k) {
    if (s[k] < '0' || s[k] > '9') return -1;
    v = v * 10 + (s[k] - '0');
  }
  return v;
}

// "YYYY-MM-DD HH:MM:SS[.fraction][Z]" (or a 'T' between) as nanoseconds
// since 1970 (UTC; a trace's offsets need only differences).
std::optional<int64_t> parse_date_time(std::string_view s) {
  const int y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  const int h = digits(s, 11, 2), mi = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || sec < 0) return std::nullopt;
  if (s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
      s[16] != ':') {
    return std::nullopt;
  }
  // Years 1970..2200: nanoseconds since 1970, and any difference of two, fit in int64.
  if (y < 1970 || y > 2200 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year{y}, std::chrono::month(mo),
                                         std::chrono::day(d)};
  if (!date.ok()) return std::nullopt;
  int64_t fraction_ns = 0;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int64_t scale = 100'000'000;
    const size_t first = i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      fraction_ns += (s[i] - '0') * scale;
      scale /= 10;  // digits past the nanosecond add nothing
    }
    if (i == first) return std::nullopt;
  }
  if (i < s.size() && s[i] == 'Z') ++i;
  if (i != s.size()) return std::nullopt;
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return ((days * 24 + h) * 60 + mi) * int64_t{60'000'000'000} + sec * int64_t{1'000'000'000} +
         fraction_ns;
}

Expected<uint32_t> length_of(std::string_view cell, std::string_view column, size_t line) {
  const std::optional<double> v = number(cell);
  if (!v || *v < 0 || *v > kMaxLength || std::floor(*v) != *v) {
    return at_line(line, std::string(column) + " " + quote(cell) +
                             " is not a whole number of tokens from 0 to " +
                             message_number(kMaxLength));
  }
  return static_cast<uint32_t>(*v);
}

// Appends one request, its time in nanoseconds as read (made relative later).
struct Builder {
  LlmTrace trace;
  std::vector<int64_t> ns;

  Status add(int64_t at_ns, GenLengths len, std::string_view cell, size_t line) {
    if (!ns.empty() && at_ns < ns.back()) {
      return at_line(line, "timestamp " + quote(cell) + " is before the previous line's");
    }
    if (!ns.empty() && static_cast<double>(at_ns - ns.front()) > kMaxOffsetS * 1e9) {
      return at_line(line, "timestamp " + quote(cell) + " is more than " +
                               message_number(kMaxOffsetS) + " s after the first");
    }
    ns.push_back(at_ns);
    trace.lengths.push_back(len);
    return Status::Ok();
  }

  Expected<LlmTrace> finish() {
    if (ns.empty()) return invalid_argument("the " + trace.format + " trace has no requests");
    trace.at.reserve(ns.size());
    for (int64_t v : ns) trace.at.emplace_back(v - ns.front());
    return std::move(trace);
  }
};

struct Line {
  std::string_view text;
  size_t number;
};

std::vector<Line> lines_of(std::string_view text) {
  std::vector<Line> out;
  size_t n = 0;
  while (!text.empty()) {
    ++n;
    const size_t nl = text.find('\n');
    std::string_view row = trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!row.empty()) out.push_back({row, n});
  }
  return out;
}

Expected<LlmTrace> parse_mooncake(const std::vector<Line>& lines) {
  Builder b;
  b.trace.format = "mooncake";
  for (const Line& l : lines) {
    const nlohmann::json j = nlohmann::json::parse(l.text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return at_line(l.number, quote(l.text) + " is not a JSON object");
    }
    GenLengths len;
    double ms = 0;
    for (const char* key : {"timestamp", "input_length", "output_length"}) {
      auto it = j.find(key);
      if (it == j.end()) return at_line(l.number, std::string("no \"") + key + "\"");
      if (!it->is_number()) {
        return at_line(l.number,
                       std::string("\"") + key + "\" is " + quote(it->dump()) + ", not a number");
      }
      const std::string cell = it->dump();
      if (std::string_view(key) == "timestamp") {
        ms = it->get<double>();
        if (!std::isfinite(ms) || ms < 0 || ms > kMaxOffsetS * 1e3) {
          return at_line(l.number, "timestamp " + quote(cell) +
                                       " ms is out of range; allowed 0 to " +
                                       message_number(kMaxOffsetS * 1e3) + " ms");
        }
        continue;
      }
      auto v = length_of(cell, key, l.number);
      if (!v) return v.error();
      (std::string_view(key) == "input_length" ? len.prompt : len.max_tokens) = *v;
    }
    const auto at_ns = static_cast<int64_t>(std::llround(ms * 1e6));
    if (Status s = b.add(at_ns, len, j["timestamp"].dump(), l.number); !s) return s.error();
  }
  return b.finish();
}

// Columns of a CSV header, by lower-case name.
struct Columns {
  int time = -1, prompt = -1, output = -1;
};

Columns find_columns(const std::vector<std::string>& header, std::string_view time,
                     std::string_view prompt, std::string_view output) {
  Columns c;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string name = lower(header[i]);
    if (name == time) c.time = static_cast<int>(i);
    if (name == prompt) c.prompt = static_cast<int>(i);
    if (name == output) c.output = static_cast<int>(i);
  }
  return c;
}

Expected<LlmTrace> parse_csv(const std::vector<Line>& lines, const char* format, Columns c,
                             bool date_times) {
  Builder b;
  b.trace.format = format;
  const auto columns = static_cast<size_t>(std::max({c.time, c.prompt, c.output}) + 1);
  for (size_t i = 1; i < lines.size(); ++i) {
    const Line& l = lines[i];
    const std::vector<std::string> cells = split_csv(l.text);
    if (cells.size() < columns) {
      return at_line(l.number, std::to_string(cells.size()) + " columns, but the header has " +
                                   std::to_string(columns) + " or more");
    }
    const std::string& when = cells[static_cast<size_t>(c.time)];
    int64_t at_ns = 0;
    if (date_times) {
      auto t = parse_date_time(when);
      if (!t) {
        return at_line(l.number, "TIMESTAMP " + quote(when) +
                                     " is not a date-time like 2023-11-16 18:15:46.68");
      }
      at_ns = *t;
    } else {
      const std::optional<double> s = number(when);
      if (!s || *s < 0 || *s > kMaxOffsetS) {
        return at_line(l.number, "Timestamp " + quote(when) +
                                     " is not a number of seconds from 0 to " +
                                     message_number(kMaxOffsetS));
      }
      at_ns = static_cast<int64_t>(std::llround(*s * 1e9));
    }
    const std::string& p = cells[static_cast<size_t>(c.prompt)];
    const std::string& o = cells[static_cast<size_t>(c.output)];
    auto prompt = length_of(p, date_times ? "ContextTokens" : "Request tokens", l.number);
    if (!prompt) return prompt.error();
    auto output = length_of(o, date_times ? "GeneratedTokens" : "Response tokens", l.number);
    if (!output) return output.error();
    if (Status s = b.add(at_ns, {*prompt, *output}, when, l.number); !s) return s.error();
  }
  return b.finish();
}

}  // namespace

Expected<LlmTrace> parse_llm_trace(std::string_view text) {
  const std::vector<Line> lines = lines_of(text);
  if (lines.empty()) return invalid_argument("the trace is empty");
  if (lines.front().text.front() == '{') return parse_mooncake(lines);
  const std::vector<std::string> header = split_csv(lines.front().text);
  const Columns azure = find_columns(header, "timestamp", "contexttokens", "generatedtokens");
  if (azure.time >= 0 && azure.prompt >= 0 && azure.output >= 0) {
    return parse_csv(lines, "azure", azure, true);
  }
  const Columns burst = find_columns(header, "timestamp", "request tokens", "response tokens");
  if (burst.time >= 0 && burst.prompt >= 0 && burst.output >= 0) {
    return parse_csv(lines, "burstgpt", burst, false);
  }
  auto offsets = parse_trace_csv(text);
  if (!offsets) return offsets.error();
  LlmTrace t;
  t.format = "timestamps";
  t.at = std::move(*offsets);
  return t;
}

Expected<LlmTrace> load_llm_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot read " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return invalid_argument("cannot read " + path);
  auto t = parse_llm_trace(text);
  if (!t) return invalid_argument(path + ": " + t.error().message);
  return t;
}

std::string ContextFit::describe(uint32_t context) const {
  std::string out;
  auto add = [&out](size_t n, const std::string& what) {
    if (n == 0) return;
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(prompts_clipped, std::string(prompts_clipped == 1 ? "prompt" : "prompts") +
                           " clipped to the model's context of " + std::to_string(context) +
                           " tokens");
  add(outputs_cut, "max_tokens cut so that prompt and output fit in it");
  add(raised, "empty prompts or zero max_tokens raised to 1");
  return out;
}

ContextFit fit_to_context(std::vector<GenLengths>& lengths, uint32_t context) {
  ContextFit fit;
  context = std::max<uint32_t>(context, 2);
  for (GenLengths& l : lengths) {
    if (l.prompt == 0 || l.max_tokens == 0) {
      ++fit.raised;
      l.prompt = std::max<uint32_t>(l.prompt, 1);
      l.max_tokens = std::max<uint32_t>(l.max_tokens, 1);
    }
    if (l.prompt > context - 1) {
      ++fit.prompts_clipped;
      l.prompt = context - 1;
    }
    if (l.max_tokens > context - l.prompt) {
      ++fit.outputs_cut;
      l.max_tokens = context - l.prompt;
    }
  }
  return fit;
}

}  // namespace batchscope
