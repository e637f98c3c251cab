// SPDX-License-Identifier: GPL-3.0-or-later
// Tests for prometheus_text(): a small exposition-format validator written
// here from the format's rules (not from the implementation), then exact
// values for hand-built snapshots, escaping, and optionally promtool.

#include "api/prometheus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace batchscope {
namespace {

// ---- the validator ----

using Labels = std::map<std::string, std::string>;  // unescaped values

struct Sample {
  std::string name;
  Labels labels;
  std::string raw_value;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram
  std::vector<Sample> samples;
  std::string error;  // empty when the text is valid

  // The value of one sample; NaN (and a test failure) when it is missing.
  double get(const std::string& name, const Labels& labels = {}) const {
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    ADD_FAILURE() << "no sample " << name;
    return std::numeric_limits<double>::quiet_NaN();
  }
  std::string raw(const std::string& name, const Labels& labels = {}) const {
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) return s.raw_value;
    }
    ADD_FAILURE() << "no sample " << name;
    return {};
  }
};

bool is_name_start(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool is_name_char(char c, bool colon) { return is_name_start(c, colon) || (c >= '0' && c <= '9'); }

// Reads a metric (colon allowed) or label name at `pos`; empty on failure.
std::string read_name(const std::string& line, size_t& pos, bool colon) {
  const size_t start = pos;
  if (pos >= line.size() || !is_name_start(line[pos], colon)) return {};
  while (pos < line.size() && is_name_char(line[pos], colon)) ++pos;
  return line.substr(start, pos - start);
}

// Go ParseFloat spellings that Prometheus accepts, plus plain decimals.
bool parse_value(const std::string& text, double& out) {
  if (text == "NaN") return out = std::numeric_limits<double>::quiet_NaN(), true;
  if (text == "+Inf") return out = std::numeric_limits<double>::infinity(), true;
  if (text == "-Inf") return out = -std::numeric_limits<double>::infinity(), true;
  if (text.empty()) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return false;
  }
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

std::string base_family(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return {};
}

Exposition parse(const std::string& text) {
  Exposition e;
  auto fail = [&](const std::string& why, const std::string& line) {
    if (e.error.empty()) e.error = why + " in line: " + line;
  };
  if (text.empty() || text.back() != '\n') fail("text must end with a newline", "");
  std::set<std::string> helped, done_families, sample_keys;
  std::string current;  // family of the previous sample
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line) && e.error.empty()) {
    if (line.empty()) {
      fail("empty line", line);
    } else if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      size_t pos = 7;
      const std::string name = read_name(line, pos, true);
      if (name.empty() || pos >= line.size() || line[pos] != ' ') {
        fail("bad comment", line);
        continue;
      }
      if (done_families.count(name) || current == name) fail("metadata after samples", line);
      if (line[2] == 'H') {
        if (!helped.insert(name).second) fail("second HELP", line);
      } else {
        const std::string type = line.substr(pos + 1);
        if (type != "counter" && type != "gauge" && type != "histogram") fail("bad TYPE", line);
        if (!e.types.emplace(name, type).second) fail("second TYPE", line);
        if (type == "counter" && !name.ends_with("_total")) fail("counter without _total", line);
      }
    } else if (line[0] == '#') {
      fail("unexpected comment", line);
    } else {
      Sample s;
      size_t pos = 0;
      s.name = read_name(line, pos, true);
      if (s.name.empty()) fail("bad metric name", line);
      if (pos < line.size() && line[pos] == '{') {
        ++pos;
        while (e.error.empty() && pos < line.size() && line[pos] != '}') {
          const std::string key = read_name(line, pos, false);
          if (key.empty() || line.compare(pos, 2, "=\"") != 0) {
            fail("bad label", line);
            break;
          }
          pos += 2;
          std::string value;
          while (pos < line.size() && line[pos] != '"') {
            if (line[pos] == '\\') {
              const char next = pos + 1 < line.size() ? line[pos + 1] : '\0';
              if (next == '\\')
                value += '\\';
              else if (next == '"')
                value += '"';
              else if (next == 'n')
                value += '\n';
              else
                fail("bad escape", line);
              pos += 2;
            } else {
              value += line[pos++];
            }
          }
          if (pos >= line.size()) {
            fail("unterminated label value", line);
            break;
          }
          ++pos;  // closing quote
          if (!s.labels.emplace(key, value).second) fail("duplicate label", line);
          if (pos < line.size() && line[pos] == ',')
            ++pos;
          else if (pos >= line.size() || line[pos] != '}')
            fail("bad label separator", line);
        }
        if (pos >= line.size()) {
          fail("unterminated labels", line);
          continue;
        }
        ++pos;  // '}'
      }
      if (pos >= line.size() || line[pos] != ' ') {
        fail("no space before value", line);
        continue;
      }
      s.raw_value = line.substr(pos + 1);
      if (!parse_value(s.raw_value, s.value)) fail("bad value (or a timestamp)", line);

      const std::string family = base_family(s.name, e.types);
      if (family.empty()) fail("sample without TYPE", line);
      if (!helped.count(family)) fail("sample without HELP", line);
      if (family != current) {
        if (done_families.count(family)) fail("family not contiguous", line);
        if (!current.empty()) done_families.insert(current);
        current = family;
      }
      const std::string type = e.types[family];
      if (type == "counter" &&
          (s.value < 0 || s.raw_value.find_first_not_of("0123456789") != std::string::npos))
        fail("counter is not a non-negative integer", line);
      if (s.labels.count("le") && !s.name.ends_with("_bucket")) fail("le outside _bucket", line);
      if (s.name.ends_with("_bucket") && type == "histogram" && !s.labels.count("le"))
        fail("_bucket without le", line);
      std::string key = s.name;
      for (const auto& [k, v] : s.labels) key += "\x1f" + k + "=" + v;
      if (!sample_keys.insert(key).second) fail("duplicate sample", line);
      e.samples.push_back(std::move(s));
    }
  }
  if (!e.error.empty()) return e;

  // Histogram structure, per family and label set without le.
  for (const auto& [family, type] : e.types) {
    if (type != "histogram") continue;
    std::map<Labels, std::vector<const Sample*>> buckets;
    for (const Sample& s : e.samples) {
      if (s.name != family + "_bucket") continue;
      Labels rest = s.labels;
      rest.erase("le");
      buckets[rest].push_back(&s);
    }
    if (buckets.empty()) fail("histogram without buckets", family);
    for (const auto& [labels, list] : buckets) {
      double prev_le = -std::numeric_limits<double>::infinity();
      double prev_count = 0;
      for (const Sample* b : list) {
        double le = 0;
        if (!parse_value(b->labels.at("le"), le) || !(le > prev_le))
          fail("le not increasing", family);
        if (b->value < prev_count) fail("cumulative counts decrease", family);
        prev_le = le;
        prev_count = b->value;
      }
      if (list.back()->labels.at("le") != "+Inf") fail("last bucket is not +Inf", family);
      bool has_count = false, has_sum = false;
      for (const Sample& s : e.samples) {
        if (s.labels != labels) continue;
        if (s.name == family + "_count") {
          has_count = true;
          if (s.value != list.back()->value) fail("+Inf bucket != _count", family);
        }
        if (s.name == family + "_sum") has_sum = true;
      }
      if (!has_count || !has_sum) fail("histogram without _count or _sum", family);
    }
  }
  return e;
}

// ---- snapshots ----

constexpr uint64_t kMs = 1'000'000;  // nanoseconds

// A snapshot with known figures everywhere.
MetricsSnapshot known_snapshot() {
  MetricsSnapshot s;
  EngineCounters& c = s.engine.counters;
  c.ok = 11;
  c.rejected = 2;
  c.timed_out = 3;
  c.cancelled = 4;
  c.model_errors = 5;
  c.shutdown = 6;
  c.invalid = 7;
  c.batches_by_reason[0] = 10;
  c.batches_by_reason[1] = 20;
  c.batches_by_reason[2] = 30;
  c.batches = 60;
  c.failed_batches = 1;
  c.wakeups = 99;
  c.records_dropped = 12;
  s.engine.queue_depth = 5;
  s.engine.busy_lanes = 1;
  s.engine.live_lanes = 2;
  s.engine.arrival_rate_per_s = 123.5;
  s.engine.running = true;
  s.engine.options_version = 7;
  s.engine.options = Options{.max_batch_size = 64,
                             .max_wait_us = 2500,
                             .queue_capacity = 512,
                             .request_timeout_ms = 30000,
                             .num_lanes = 2,
                             .strategy = StrategyKind::kAdaptive,
                             .target_p99_ms = 50.0};
  s.engine.limits = Limits{.max_batch = 48, .max_wait = std::chrono::microseconds(1500)};

  // Batch sizes: 1 x3, 2, 3 x2, 8, 9, 300 (log bucket [300, 301]), 4096.
  MetricsWindow& t = s.totals;
  for (uint64_t size : {1, 1, 1, 2, 3, 3, 8, 9, 300, 4096}) {
    t.batch_sizes.record(size);
    t.batch_size_sum += size;
    ++t.batches;
  }
  // Latencies placed well inside one le bucket each.
  for (uint64_t ns : {uint64_t{50'000}, uint64_t{300'000}, 3 * kMs, 20'000 * kMs})
    t.queue_wait_ns.record(ns);
  for (uint64_t ns : {uint64_t{1'200'000}, uint64_t{1'200'000}, 40 * kMs, 40 * kMs})
    t.run_ns.record(ns);
  for (uint64_t ns : {7 * kMs, 7 * kMs, 7 * kMs, 700 * kMs}) t.total_ns.record(ns);
  return s;
}

ServerInfo known_info() {
  return ServerInfo{.model = "lin\"ear\\x\nz",
                    .device = "cuda:0",
                    .version = "0.1.0",
                    .http_requests = 100,
                    .http_errors = 3};
}

// Cumulative le buckets of one histogram series, in order.
std::vector<std::pair<std::string, double>> buckets(const Exposition& e, const std::string& family,
                                                    const Labels& labels = {}) {
  std::vector<std::pair<std::string, double>> out;
  for (const Sample& s : e.samples) {
    if (s.name != family + "_bucket") continue;
    Labels rest = s.labels;
    rest.erase("le");
    if (rest == labels) out.emplace_back(s.labels.at("le"), s.value);
  }
  return out;
}

// ---- tests ----

TEST(PrometheusValidator, RejectsBrokenText) {
  EXPECT_TRUE(parse("# HELP a_total x\n# TYPE a_total counter\na_total 1\n").error.empty());
  EXPECT_FALSE(parse("a_total 1\n").error.empty());                          // no HELP/TYPE
  EXPECT_FALSE(parse("# HELP a x\n# TYPE a counter\na 1\n").error.empty());  // no _total
  EXPECT_FALSE(parse("# HELP a x\n# TYPE a gauge\na{l=\"v} 1\n").error.empty());
  EXPECT_FALSE(parse("# HELP a x\n# TYPE a gauge\na{l=\"\\t\"} 1\n").error.empty());
  EXPECT_FALSE(parse("# HELP a x\n# TYPE a gauge\na 1\na 2\n").error.empty());
  EXPECT_FALSE(parse("# HELP a x\n# TYPE a gauge\na 1").error.empty());
  EXPECT_FALSE(parse("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                     "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n")
                   .error.empty());
  EXPECT_FALSE(parse("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
                     "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n")
                   .error.empty());
}

TEST(PrometheusText, IsValidExposition) {
  const std::string text = prometheus_text(known_snapshot(), known_info());
  const Exposition e = parse(text);
  ASSERT_TRUE(e.error.empty()) << e.error << "\n" << text;
  for (const auto& [family, type] : e.types) {
    EXPECT_TRUE(family.starts_with("batchscope_")) << family;
  }
  EXPECT_EQ(e.types.at("batchscope_batch_size"), "histogram");
  EXPECT_EQ(e.types.at("batchscope_request_duration_seconds"), "histogram");
  EXPECT_EQ(e.types.at("batchscope_queue_depth"), "gauge");
}

TEST(PrometheusText, EmptySnapshotIsValidWithZeroHistograms) {
  const std::string text = prometheus_text(MetricsSnapshot{}, ServerInfo{});
  const Exposition e = parse(text);
  ASSERT_TRUE(e.error.empty()) << e.error << "\n" << text;
  EXPECT_EQ(e.get("batchscope_batch_size_count"), 0);
  EXPECT_EQ(e.get("batchscope_request_duration_seconds_count", {{"stage", "total"}}), 0);
  EXPECT_EQ(buckets(e, "batchscope_batch_size").size(), 14u);
  EXPECT_EQ(buckets(e, "batchscope_request_duration_seconds", {{"stage", "run"}}).size(), 17u);
  EXPECT_EQ(text.find("nan"), std::string::npos);
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  EXPECT_EQ(text.find(" inf"), std::string::npos);
  EXPECT_EQ(e.get("batchscope_model_info", {{"model", ""}, {"device", ""}, {"version", ""}}), 1);
}

TEST(PrometheusText, RequestAndBatchCountersComeFromTheEngineCounters) {
  MetricsSnapshot s = known_snapshot();
  // Windows that disagree (records were dropped) must not leak into counters.
  s.totals.outcomes[static_cast<int>(Outcome::kOk)] = 1;
  const Exposition e = parse(prometheus_text(s, known_info()));
  ASSERT_TRUE(e.error.empty()) << e.error;
  const std::string r = "batchscope_requests_total";
  EXPECT_EQ(e.get(r, {{"outcome", "ok"}}), 11);
  EXPECT_EQ(e.get(r, {{"outcome", "rejected"}}), 2);
  EXPECT_EQ(e.get(r, {{"outcome", "timeout"}}), 3);
  EXPECT_EQ(e.get(r, {{"outcome", "cancelled"}}), 4);
  EXPECT_EQ(e.get(r, {{"outcome", "error"}}), 5);
  EXPECT_EQ(e.get(r, {{"outcome", "shutdown"}}), 6);
  EXPECT_EQ(e.get(r, {{"outcome", "invalid"}}), 7);
  EXPECT_EQ(e.get("batchscope_batches_total", {{"reason", "full"}}), 10);
  EXPECT_EQ(e.get("batchscope_batches_total", {{"reason", "timeout"}}), 20);
  EXPECT_EQ(e.get("batchscope_batches_total", {{"reason", "drain"}}), 30);
  EXPECT_EQ(e.get("batchscope_failed_batches_total"), 1);
  EXPECT_EQ(e.get("batchscope_records_dropped_total"), 12);
  EXPECT_EQ(e.get("batchscope_wakeups_total"), 99);
  EXPECT_EQ(e.get("batchscope_http_requests_total"), 100);
  EXPECT_EQ(e.get("batchscope_http_errors_total"), 3);
}

TEST(PrometheusText, GaugesCarryTheLiveStateAndOptionsInSeconds) {
  const Exposition e = parse(prometheus_text(known_snapshot(), known_info()));
  ASSERT_TRUE(e.error.empty()) << e.error;
  EXPECT_EQ(e.get("batchscope_running"), 1);
  EXPECT_EQ(e.get("batchscope_queue_depth"), 5);
  EXPECT_EQ(e.get("batchscope_busy_lanes"), 1);
  EXPECT_EQ(e.get("batchscope_lanes"), 2);
  EXPECT_EQ(e.raw("batchscope_arrival_rate_per_second"), "123.5");
  EXPECT_EQ(e.get("batchscope_option_max_batch_size"), 64);
  EXPECT_EQ(e.raw("batchscope_option_max_wait_seconds"), "0.0025");
  EXPECT_EQ(e.get("batchscope_option_queue_capacity"), 512);
  EXPECT_EQ(e.get("batchscope_option_request_timeout_seconds"), 30);
  EXPECT_EQ(e.get("batchscope_option_lanes"), 2);
  EXPECT_EQ(e.get("batchscope_options_version"), 7);
  EXPECT_EQ(e.get("batchscope_option_strategy_info", {{"strategy", "adaptive"}}), 1);
  EXPECT_DOUBLE_EQ(e.get("batchscope_option_target_p99_seconds"), 0.05);
  EXPECT_EQ(e.get("batchscope_effective_max_batch_size"), 48);
  EXPECT_DOUBLE_EQ(e.get("batchscope_effective_max_wait_seconds"), 0.0015);
}

TEST(PrometheusText, BatchSizeBucketsAreTheHandComputedCumulativeCounts) {
  const Exposition e = parse(prometheus_text(known_snapshot(), known_info()));
  ASSERT_TRUE(e.error.empty()) << e.error;
  const std::vector<std::pair<std::string, double>> want = {
      {"1", 3},   {"2", 4},   {"4", 6},   {"8", 7},    {"16", 8},   {"32", 8},    {"64", 8},
      {"128", 8}, {"256", 8}, {"512", 9}, {"1024", 9}, {"2048", 9}, {"4096", 10}, {"+Inf", 10}};
  EXPECT_EQ(buckets(e, "batchscope_batch_size"), want);
  EXPECT_EQ(e.raw("batchscope_batch_size_sum"), "4424");
  EXPECT_EQ(e.get("batchscope_batch_size_count"), 10);
}

TEST(PrometheusText, LatencyBucketsAndSumsInSeconds) {
  const Exposition e = parse(prometheus_text(known_snapshot(), known_info()));
  ASSERT_TRUE(e.error.empty()) << e.error;
  const std::string f = "batchscope_request_duration_seconds";
  auto cumulative_at = [&](const std::string& stage, const std::string& le) {
    for (const auto& [l, v] : buckets(e, f, {{"stage", stage}})) {
      if (l == le) return v;
    }
    ADD_FAILURE() << "no bucket " << stage << " " << le;
    return -1.0;
  };
  // queue: 50 us, 300 us, 3 ms, 20 s
  EXPECT_EQ(cumulative_at("queue", "0.0001"), 1);
  EXPECT_EQ(cumulative_at("queue", "0.00025"), 1);
  EXPECT_EQ(cumulative_at("queue", "0.0005"), 2);
  EXPECT_EQ(cumulative_at("queue", "0.0025"), 2);
  EXPECT_EQ(cumulative_at("queue", "0.005"), 3);
  EXPECT_EQ(cumulative_at("queue", "10"), 3);
  EXPECT_EQ(cumulative_at("queue", "+Inf"), 4);
  EXPECT_DOUBLE_EQ(e.get(f + "_sum", {{"stage", "queue"}}), 20.00335);
  EXPECT_EQ(e.get(f + "_count", {{"stage", "queue"}}), 4);
  // run: 1.2 ms x2, 40 ms x2
  EXPECT_EQ(cumulative_at("run", "0.001"), 0);
  EXPECT_EQ(cumulative_at("run", "0.0025"), 2);
  EXPECT_EQ(cumulative_at("run", "0.025"), 2);
  EXPECT_EQ(cumulative_at("run", "0.05"), 4);
  EXPECT_DOUBLE_EQ(e.get(f + "_sum", {{"stage", "run"}}), 0.0824);
  // total: 7 ms x3, 700 ms
  EXPECT_EQ(cumulative_at("total", "0.005"), 0);
  EXPECT_EQ(cumulative_at("total", "0.01"), 3);
  EXPECT_EQ(cumulative_at("total", "0.5"), 3);
  EXPECT_EQ(cumulative_at("total", "1"), 4);
  EXPECT_DOUBLE_EQ(e.get(f + "_sum", {{"stage", "total"}}), 0.721);
  EXPECT_EQ(e.get(f + "_count", {{"stage", "total"}}), 4);
}

// The documented approximation: a log bucket that straddles an le bound
// counts by its upper end, one le bucket high; the exact max clamps it.
TEST(PrometheusText, StraddlingLogBucketCountsByItsUpperEndUnlessItHoldsTheMax) {
  MetricsSnapshot s;
  s.totals.batch_sizes.record(512);   // log bucket [512, 515]
  s.totals.batch_sizes.record(1000);  // the max
  s.totals.batch_size_sum = 1512;
  s.totals.batches = 2;
  s.totals.total_ns.record(10'000'000'000);  // exactly 10 s, the max: le="10"
  s.totals.run_ns.record(1'000'000);         // 1 ms, log bucket ends above 1 ms
  s.totals.run_ns.record(2'000'000);
  const Exposition e = parse(prometheus_text(s, ServerInfo{}));
  ASSERT_TRUE(e.error.empty()) << e.error;
  const auto b = buckets(e, "batchscope_batch_size");
  EXPECT_EQ(b[9], (std::pair<std::string, double>{"512", 0}));
  EXPECT_EQ(b[10], (std::pair<std::string, double>{"1024", 2}));
  const std::string f = "batchscope_request_duration_seconds";
  const auto total = buckets(e, f, {{"stage", "total"}});
  EXPECT_EQ(total[15], (std::pair<std::string, double>{"10", 1}));
  const auto run = buckets(e, f, {{"stage", "run"}});
  EXPECT_EQ(run[3], (std::pair<std::string, double>{"0.001", 0}));
  EXPECT_EQ(run[4], (std::pair<std::string, double>{"0.0025", 2}));

  MetricsSnapshot big;
  big.totals.batch_sizes.record(10'000);  // beyond the last edge
  const Exposition e2 = parse(prometheus_text(big, ServerInfo{}));
  ASSERT_TRUE(e2.error.empty()) << e2.error;
  EXPECT_EQ(buckets(e2, "batchscope_batch_size")[12].second, 0);
  EXPECT_EQ(buckets(e2, "batchscope_batch_size")[13].second, 1);
}

TEST(PrometheusText, EscapesLabelValues) {
  const std::string text = prometheus_text(known_snapshot(), known_info());
  EXPECT_NE(text.find("batchscope_model_info{model=\"lin\\\"ear\\\\x\\nz\",device=\"cuda:0\","
                      "version=\"0.1.0\"} 1\n"),
            std::string::npos)
      << text;
  const Exposition e = parse(text);
  ASSERT_TRUE(e.error.empty()) << e.error;
  EXPECT_EQ(e.get("batchscope_model_info",
                  {{"model", "lin\"ear\\x\nz"}, {"device", "cuda:0"}, {"version", "0.1.0"}}),
            1);
}

TEST(PrometheusLabelValue, KeepsUtf8AndReplacesInvalidBytes) {
  auto esc = [](std::string_view v) {
    std::string out;
    append_prometheus_label_value(out, v);
    return out;
  };
  EXPECT_EQ(esc("plain-1.0_x"), "plain-1.0_x");
  EXPECT_EQ(esc("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(esc("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string bad = "\xEF\xBF\xBD";
  EXPECT_EQ(esc("a\xFF"
                "b"),
            "a" + bad + "b");
  EXPECT_EQ(esc("\xE2\x82"), bad + bad);                      // truncated
  EXPECT_EQ(esc("\xC0\xAF"), bad + bad);                      // overlong '/'
  EXPECT_EQ(esc("\xED\xA0\x80"), bad + bad + bad);            // surrogate
  EXPECT_EQ(esc("\xF4\x90\x80\x80"), bad + bad + bad + bad);  // above U+10FFFF
  EXPECT_EQ(esc(std::string_view("a\0b", 3)), std::string("a\0b", 3));
}

TEST(PrometheusText, NonFiniteGaugesUseTheFormatsSpelling) {
  MetricsSnapshot s;
  s.engine.arrival_rate_per_s = std::numeric_limits<double>::quiet_NaN();
  s.engine.options.target_p99_ms = std::numeric_limits<double>::infinity();
  const std::string text = prometheus_text(s, ServerInfo{});
  const Exposition e = parse(text);
  ASSERT_TRUE(e.error.empty()) << e.error;
  EXPECT_EQ(e.raw("batchscope_arrival_rate_per_second"), "NaN");
  EXPECT_EQ(e.raw("batchscope_option_target_p99_seconds"), "+Inf");
}

// Folding hand-made records through the monitor gives the same figures as
// the records say.
struct FakeEngine {
  RecordBatch pending;
  EngineStatus st;
  void drain_records(RecordBatch& out) {
    out.clear();
    std::swap(out, pending);
  }
  EngineStatus status() const { return st; }
};

TEST(PrometheusText, RendersAMonitorSnapshotOfFoldedRecords) {
  FakeEngine engine;
  const TimePoint t0 = TimePoint(std::chrono::seconds(100));
  for (int i = 0; i < 4; ++i) {
    RequestRecord r;
    r.id = static_cast<RequestId>(i + 1);
    r.batch_id = 1;
    r.batch_size = 4;
    r.times.arrival = t0;
    r.times.admitted = t0;
    r.times.batched = t0 + microseconds(200);  // queue 0.2 ms
    r.times.run_start = t0 + microseconds(200);
    r.times.run_end = t0 + microseconds(3200);    // run 3 ms
    r.times.completed = t0 + microseconds(3300);  // total 3.3 ms
    engine.pending.requests.push_back(r);
  }
  BatchRecord b;
  b.id = 1;
  b.size = 4;
  b.reason = BatchReason::kTimeout;
  b.batched = t0 + microseconds(200);
  b.run_start = b.batched;
  b.run_end = t0 + microseconds(3200);
  engine.pending.batches.push_back(b);
  engine.st.counters.ok = 4;
  engine.st.counters.batches = 1;
  engine.st.counters.batches_by_reason[static_cast<int>(BatchReason::kTimeout)] = 1;

  EngineMonitor monitor(milliseconds(1), 10);
  const MetricsSnapshot s = monitor.poll(engine);
  ServerInfo info;
  info.model = "m";
  const Exposition e = parse(prometheus_text(s, info));
  ASSERT_TRUE(e.error.empty()) << e.error;
  EXPECT_EQ(e.get("batchscope_requests_total", {{"outcome", "ok"}}), 4);
  EXPECT_EQ(e.get("batchscope_batch_size_bucket", {{"le", "2"}}), 0);
  EXPECT_EQ(e.get("batchscope_batch_size_bucket", {{"le", "4"}}), 1);
  EXPECT_EQ(e.get("batchscope_batch_size_sum"), 4);
  const std::string f = "batchscope_request_duration_seconds";
  EXPECT_EQ(e.get(f + "_bucket", {{"stage", "queue"}, {"le", "0.00025"}}), 4);
  EXPECT_EQ(e.get(f + "_bucket", {{"stage", "queue"}, {"le", "0.0001"}}), 0);
  EXPECT_EQ(e.get(f + "_bucket", {{"stage", "run"}, {"le", "0.005"}}), 4);
  EXPECT_EQ(e.get(f + "_bucket", {{"stage", "run"}, {"le", "0.0025"}}), 0);
  EXPECT_DOUBLE_EQ(e.get(f + "_sum", {{"stage", "total"}}), 4 * 0.0033);
}

TEST(PrometheusText, PromtoolAcceptsIt) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed";
  }
  char path[] = "/tmp/batchscope_metrics_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream f(path, std::ios::binary);
    f << prometheus_text(known_snapshot(), known_info());
  }
  const std::string log = std::string(path) + ".log";
  const int rc = std::system(
      ("promtool check metrics < " + std::string(path) + " > " + log + " 2>&1").c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << output;
  std::remove(path);
  std::remove(log.c_str());
}

}  // namespace
}  // namespace batchscope
