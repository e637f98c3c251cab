// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/length_grid.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/text_out.h"
#include "tuning/cost_model.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;

std::string quoted(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

// The segment [i, i + 1] of `axis` (through `f`, rising) to read x in (i = 0
// with one value), and where x lies along it (0 at i, 1 at i + 1; outside
// [0, 1] beyond the ends).
struct Segment {
  size_t i = 0;
  double at = 0;
};
template <class F>
Segment segment_of(const std::vector<uint32_t>& axis, F f, double x) {
  if (axis.size() < 2) return {};
  size_t i = 0;
  while (i + 2 < axis.size() && x > f(axis[i + 1])) ++i;
  return {i, (x - f(axis[i])) / (f(axis[i + 1]) - f(axis[i]))};
}

// Reads a rising array of whole numbers 1..max into `out`.
Status read_axis(const Json& j, const char* name, const std::string& where,
                 std::vector<uint32_t>& out) {
  const auto it = j.find(name);
  if (it == j.end()) return invalid_argument(where + name + " is missing");
  if (!it->is_array() || it->empty() || it->size() > kMaxGridAxis) {
    return invalid_argument(where + name + " = " + quoted(*it) + " must be an array of 1 to " +
                            std::to_string(kMaxGridAxis) + " whole numbers");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > UINT32_MAX) {
      return invalid_argument(where + name + "[" + std::to_string(i) + "] = " + quoted(v) +
                              " must be a whole number from 1");
    }
    out.push_back(static_cast<uint32_t>(v.get<int64_t>()));
  }
  return Status::Ok();
}

}  // namespace

Status LengthGrid::validate() const {
  if (empty() && lengths.empty() && median_us.empty()) return Status::Ok();
  const std::string where = "length_grid.";
  const auto rising = [&](const std::vector<uint32_t>& axis, const char* name) -> Status {
    if (axis.empty() || axis.size() > kMaxGridAxis) {
      return invalid_argument(where + name + " holds " + std::to_string(axis.size()) +
                              " values; a grid holds 1 to " + std::to_string(kMaxGridAxis));
    }
    for (size_t i = 0; i < axis.size(); ++i) {
      if (axis[i] < 1 || (i > 0 && axis[i] <= axis[i - 1])) {
        return invalid_argument(where + name + "[" + std::to_string(i) +
                                "] = " + std::to_string(axis[i]) + " must be above " +
                                (i > 0 ? std::to_string(axis[i - 1]) : std::string("0")));
      }
    }
    return Status::Ok();
  };
  if (Status s = rising(batches, "batches"); !s) return s;
  if (Status s = rising(lengths, "lengths"); !s) return s;
  if (std::find(lengths.begin(), lengths.end(), reference) == lengths.end()) {
    return invalid_argument(where + "reference = " + std::to_string(reference) +
                            " must be one of the lengths measured");
  }
  if (median_us.size() != batches.size() * lengths.size()) {
    return invalid_argument(where + "median_us holds " + std::to_string(median_us.size()) +
                            " values; " + std::to_string(batches.size()) + " batch sizes by " +
                            std::to_string(lengths.size()) + " lengths make " +
                            std::to_string(batches.size() * lengths.size()));
  }
  for (size_t i = 0; i < median_us.size(); ++i) {
    if (!(median_us[i] >= 0 && median_us[i] <= kMaxCostUs)) {
      return invalid_argument(where + "median_us[" + std::to_string(i / lengths.size()) + "][" +
                              std::to_string(i % lengths.size()) +
                              "] = " + std::to_string(median_us[i]) + " must be in 0.." +
                              std::to_string(kMaxCostUs));
    }
  }
  return Status::Ok();
}

double LengthGrid::us(size_t batch, uint32_t length) const {
  if (empty()) return 0;
  const auto log2_of = [](uint32_t b) { return std::log2(static_cast<double>(b)); };
  const auto same = [](uint32_t l) { return static_cast<double>(l); };
  const double x = std::clamp(std::log2(static_cast<double>(std::max<size_t>(batch, 1))),
                              log2_of(batches.front()), log2_of(batches.back()));
  const double y = std::max<double>(length, lengths.front());
  const Segment sb = segment_of(batches, log2_of, x), sl = segment_of(lengths, same, y);
  const size_t cols = lengths.size();
  // Along the lengths at row r: a straight line, extrapolated beyond the last.
  const auto row = [&](size_t r) {
    const double lo = median_us[r * cols + sl.i];
    if (cols < 2) return lo;
    return std::max(0.0, lo + (median_us[r * cols + sl.i + 1] - lo) * sl.at);
  };
  const double lo = row(sb.i);
  if (batches.size() < 2) return lo;
  return lo + (row(sb.i + 1) - lo) * sb.at;
}

double LengthGrid::extra_us(size_t batch, uint32_t length) const {
  if (empty() || length == 0 || length == reference) return 0.0;
  return us(batch, length) - us(batch, reference);
}

std::string LengthGrid::to_json() const {
  if (empty()) return "{}";
  std::string out = "{\"reference\":" + std::to_string(reference) + ",\"batches\":[";
  for (size_t i = 0; i < batches.size(); ++i) out += (i ? "," : "") + std::to_string(batches[i]);
  out += "],\"lengths\":[";
  for (size_t i = 0; i < lengths.size(); ++i) out += (i ? "," : "") + std::to_string(lengths[i]);
  out += "],\"median_us\":[";
  for (size_t r = 0; r < batches.size(); ++r) {
    out += r ? ",[" : "[";
    for (size_t c = 0; c < lengths.size(); ++c) {
      if (c) out += ',';
      append_json_number(out, median_us[r * lengths.size() + c]);
    }
    out += ']';
  }
  return out + "]}";
}

Expected<LengthGrid> LengthGrid::from_json(std::string_view text, const std::string& prefix) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception&) {
    return invalid_argument(prefix + "length_grid is not valid JSON");
  }
  const std::string where = prefix + "length_grid.";
  if (!j.is_object()) {
    return invalid_argument(prefix + "length_grid = " + quoted(j) + " must be an object");
  }
  LengthGrid g;
  if (j.empty()) return g;
  if (Status s = read_axis(j, "batches", where, g.batches); !s) return s.error();
  if (Status s = read_axis(j, "lengths", where, g.lengths); !s) return s.error();
  const auto ref = j.find("reference");
  if (ref == j.end() || !ref->is_number_integer() || ref->get<int64_t>() < 1 ||
      ref->get<int64_t>() > UINT32_MAX) {
    return invalid_argument(where + "reference = " + (ref == j.end() ? "(missing)" : quoted(*ref)) +
                            " must be a whole number from 1");
  }
  g.reference = static_cast<uint32_t>(ref->get<int64_t>());
  const auto rows = j.find("median_us");
  if (rows == j.end() || !rows->is_array() || rows->size() != g.batches.size()) {
    return invalid_argument(
        where + "median_us = " + (rows == j.end() ? "(missing)" : quoted(*rows)) + " must hold " +
        std::to_string(g.batches.size()) + " rows, one per batch size");
  }
  for (size_t r = 0; r < rows->size(); ++r) {
    const Json& row = (*rows)[r];
    if (!row.is_array() || row.size() != g.lengths.size()) {
      return invalid_argument(where + "median_us[" + std::to_string(r) + "] = " + quoted(row) +
                              " must hold " + std::to_string(g.lengths.size()) +
                              " numbers, one per length");
    }
    for (size_t c = 0; c < row.size(); ++c) {
      if (!row[c].is_number()) {
        return invalid_argument(where + "median_us[" + std::to_string(r) + "][" +
                                std::to_string(c) + "] = " + quoted(row[c]) + " must be a number");
      }
      g.median_us.push_back(row[c].get<double>());
    }
  }
  if (Status s = g.validate(); !s) return Error{s.error().code, prefix + s.error().message};
  return g;
}

std::vector<BatchRecord> at_reference_length(std::span<const BatchRecord> batches,
                                             const LengthGrid& grid) {
  std::vector<BatchRecord> out(batches.begin(), batches.end());
  if (grid.empty()) return out;
  for (BatchRecord& b : out) {
    if (b.longest == 0 || b.run_end <= b.run_start || b.run_start == TimePoint{}) continue;
    const double us = to_us(b.run_end - b.run_start) - grid.extra_us(b.size, b.longest);
    b.run_start = b.run_end - Duration(std::llround(std::clamp(us, 1.0, kMaxCostUs) * 1000.0));
  }
  return out;
}

bool has_lengths(std::span<const BatchRecord> batches) {
  return std::any_of(batches.begin(), batches.end(),
                     [](const BatchRecord& b) { return b.longest > 0; });
}

}  // namespace batchscope
