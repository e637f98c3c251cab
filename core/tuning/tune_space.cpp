// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/tune_space.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "common/text_out.h"

namespace batchscope {

namespace {

// A step grid longer than this is surely a typo, and would be materialised.
constexpr double kMaxValues = 1'000'000;
// A whole-number range this narrow lists every value.
constexpr double kEveryValueUpTo = 16;
// Values a series grid puts strictly between LO and HI.
constexpr size_t kSeriesInterior = 8;

// Mantissas times ten of the series per decade, densest first.
constexpr int kSeries10[] = {10, 12, 15, 20, 25, 30, 40, 50, 60, 80};
constexpr int kSeries6[] = {10, 15, 20, 30, 50, 70};
constexpr int kSeries3[] = {10, 20, 50};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Error entry_error(std::string_view entry, const std::string& what) {
  return invalid_argument("space entry " + quoted_excerpt(entry, 120) + ": " + what);
}

std::string known_names() {
  return "known: strategy, scheduling, padding, length_buckets, lanes (num_lanes), " +
         numeric_option_names();
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string shortest(double v) {
  std::string s;
  append_number(s, v, "NaN");
  return s;
}

// A count read plainly: 1000000, not 1e+06.
std::string count_text(double v) {
  return v < 1e15 ? std::to_string(static_cast<uint64_t>(v)) : shortest(v);
}

// The Options field a table row sets: an alias row sets another row's field.
std::string field_of(std::string_view table_name) {
  if (table_name == "max_wait_ms") return "max_wait_us";
  return std::string(table_name);
}

// m10 / 10 * 10^e, correctly rounded (both factors are exact doubles).
double series_value(int m10, int e) {
  double p = 1;
  for (int i = 0; i < std::abs(e - 1); ++i) p *= 10;
  return e - 1 >= 0 ? m10 * p : m10 / p;
}

std::vector<double> series_between(std::span<const int> mantissas, double low, double hi,
                                   double resolution, bool whole) {
  std::vector<double> out;
  const int e_lo = static_cast<int>(std::floor(std::log10(low))) - 1;
  const int e_hi = static_cast<int>(std::ceil(std::log10(hi))) + 1;
  for (int e = e_lo; e <= e_hi; ++e) {
    for (int m : mantissas) {
      const double v = series_value(m, e);
      if (v > low && v < hi && v >= resolution && (!whole || v == std::floor(v))) {
        out.push_back(v);
      }
    }
  }
  return out;
}

// LO, HI and a 1-2-5 style series between them (see the header).
std::vector<double> series_grid(double lo, double hi, double resolution, bool whole) {
  std::vector<double> out{lo, hi};
  const double low = lo > 0 ? lo : hi / 1000;
  std::vector<double> interior;
  for (std::span<const int> series :
       {std::span<const int>(kSeries10), std::span<const int>(kSeries6),
        std::span<const int>(kSeries3)}) {
    interior = series_between(series, low, hi, resolution, whole);
    if (interior.size() <= kSeriesInterior) break;
  }
  if (interior.size() > kSeriesInterior) {
    std::vector<double> thinned;
    const double last = static_cast<double>(interior.size() - 1);
    for (size_t k = 0; k < kSeriesInterior; ++k) {
      thinned.push_back(interior[static_cast<size_t>(
          std::llround(static_cast<double>(k) * last / (kSeriesInterior - 1)))]);
    }
    interior = std::move(thinned);
  }
  out.insert(out.end(), interior.begin(), interior.end());
  return out;
}

std::vector<double> powers_of_two(double lo, double hi) {
  std::vector<double> out{lo, hi};
  for (double p = 1; p < hi; p *= 2) {
    if (p > lo) out.push_back(p);
  }
  return out;
}

// The concrete values of LO..HI for option `f` (see the header).
std::vector<double> expand_range(const NumericOption& f, std::string_view field, double lo,
                                 double hi) {
  if (lo == hi) return {lo};
  if (f.whole && hi - lo + 1 <= kEveryValueUpTo) {
    std::vector<double> out;
    for (double v = lo; v <= hi; ++v) out.push_back(v);
    return out;
  }
  if (!f.whole || field == "max_wait_us") {
    const double resolution = f.whole ? 1 : std::string_view(f.name) == "max_wait_ms" ? 0.001 : 0;
    return series_grid(lo, hi, resolution, f.whole);
  }
  return powers_of_two(lo, hi);
}

// A value as the options table accepts it, or the table's refusal.
Status check_value(const NumericOption& f, std::string_view written, double v,
                   std::string_view shown) {
  Options scratch;
  return set_numeric_option(scratch, f.name, v, trim(shown), written);
}

Expected<std::vector<double>> parse_range(const NumericOption& f, std::string_view written,
                                          std::string_view entry, std::string_view values) {
  const size_t dots = values.find("..");
  std::string_view lo_text = values.substr(0, dots);
  std::string_view hi_text = values.substr(dots + 2);
  std::string_view step_text;
  if (const size_t colon = hi_text.find(':'); colon != std::string_view::npos) {
    step_text = hi_text.substr(colon + 1);
    hi_text = hi_text.substr(0, colon);
  }
  const auto lo = parse_number(lo_text);
  const auto hi = parse_number(hi_text);
  if (!lo) return entry_error(entry, quoted_excerpt(trim(lo_text)) + " is not a number");
  if (!hi) return entry_error(entry, quoted_excerpt(trim(hi_text)) + " is not a number");
  if (Status s = check_value(f, written, *lo, lo_text); !s) return entry_error(entry, s.message());
  if (Status s = check_value(f, written, *hi, hi_text); !s) return entry_error(entry, s.message());
  if (*lo > *hi) {
    return entry_error(
        entry, "LO " + std::string(trim(lo_text)) + " is above HI " + std::string(trim(hi_text)));
  }
  if (values.find(':') == std::string_view::npos) {
    return expand_range(f, field_of(f.name), *lo, *hi);
  }
  const auto step = parse_number(step_text);
  if (!step)
    return entry_error(entry, "step " + quoted_excerpt(trim(step_text)) + " is not a number");
  if (!(*step > 0) || !std::isfinite(*step)) {
    return entry_error(entry, "step " + std::string(trim(step_text)) + " must be above 0");
  }
  if (f.whole && *step != std::floor(*step)) {
    return entry_error(entry, "step " + std::string(trim(step_text)) +
                                  " must be a whole number for " + std::string(written));
  }
  const double count = std::floor((*hi - *lo) / *step + 1e-9) + 1;
  if (count > kMaxValues) {
    return entry_error(
        entry, "the grid has " + count_text(count) + " values; at most " + count_text(kMaxValues));
  }
  std::vector<double> out;
  for (double k = 0; k < count; ++k) {
    double v = std::min(*lo + k * *step, *hi);
    if (!f.whole) v = std::round(v * 1e9) / 1e9;  // 0.30000000000000004 reads as 0.3
    out.push_back(v);
  }
  return out;
}

Expected<std::vector<double>> parse_numeric_list(const NumericOption& f, std::string_view written,
                                                 std::string_view entry, std::string_view values) {
  std::vector<double> out;
  for (size_t start = 0;;) {
    const size_t bar = values.find('|', start);
    const std::string_view item = trim(values.substr(start, bar - start));
    if (item.empty()) return entry_error(entry, "an empty value in the list");
    const auto v = parse_number(item);
    if (!v) return entry_error(entry, quoted_excerpt(item) + " is not a number");
    if (Status s = check_value(f, written, *v, item); !s) return entry_error(entry, s.message());
    out.push_back(*v);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

// strategy=fifo|adaptive, scheduling=continuous|static: names in the order given.
template <class Parse>
Expected<std::vector<double>> parse_names(std::string_view entry, std::string_view what,
                                          std::string_view allowed, std::string_view values,
                                          Parse parse) {
  if (values.find("..") != std::string_view::npos) {
    return entry_error(entry, std::string(what) + " takes a list such as " + std::string(allowed) +
                                  ", not a range");
  }
  std::vector<double> out;
  for (size_t start = 0;;) {
    const size_t bar = values.find('|', start);
    const std::string_view item = trim(values.substr(start, bar - start));
    if (item.empty()) return entry_error(entry, "an empty value in the list");
    const auto v = parse(item);
    if (!v) {
      return entry_error(entry, "unknown " + std::string(what) + " " + quoted_excerpt(item) +
                                    "; allowed " + std::string(allowed));
    }
    const double d = static_cast<double>(static_cast<int>(*v));
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

// length_buckets=32/64/128|64/256: each set as --length-buckets reads it.
Expected<std::vector<double>> parse_bucket_sets(
    std::string_view entry, std::string_view values,
    std::vector<std::array<uint32_t, kMaxLengthBuckets>>& sets) {
  std::vector<double> out;
  for (size_t start = 0;;) {
    const size_t bar = values.find('|', start);
    const std::string_view item = trim(values.substr(start, bar - start));
    if (item.empty()) return entry_error(entry, "an empty value in the list");
    std::string commas(item);
    std::replace(commas.begin(), commas.end(), '/', ',');
    Options o;
    if (Status s = parse_length_buckets(commas, o); !s) {
      return entry_error(entry, quoted_excerpt(item) + ": " + s.message());
    }
    if (std::find(sets.begin(), sets.end(), o.length_buckets) == sets.end()) {
      out.push_back(static_cast<double>(sets.size()));
      sets.push_back(o.length_buckets);
    }
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

Expected<TuneDimension> parse_entry(std::string_view entry) {
  const size_t eq = entry.find('=');
  if (eq == std::string_view::npos) {
    return entry_error(entry, "expected NAME=VALUES, for example max_batch_size=1..256");
  }
  const std::string_view written = trim(entry.substr(0, eq));
  const std::string_view values = trim(entry.substr(eq + 1));
  TuneDimension d;
  d.entry = std::string(entry);
  if (values.empty()) return entry_error(entry, "no values after '='");
  Expected<std::vector<double>> parsed = std::vector<double>{};
  if (written == "strategy") {
    d.kind = TuneDimension::Kind::kStrategy;
    d.name = d.field = "strategy";
    parsed = parse_names(entry, "strategy", "fifo|adaptive", values, parse_strategy);
  } else if (written == "scheduling") {
    d.kind = TuneDimension::Kind::kScheduling;
    d.name = d.field = "scheduling";
    parsed = parse_names(entry, "scheduling", "continuous|static", values, parse_scheduling);
  } else if (written == "padding") {
    d.kind = TuneDimension::Kind::kPadding;
    d.name = d.field = "padding";
    parsed = parse_names(entry, "padding", "longest|buckets|sorted", values, parse_padding);
  } else if (written == "length_buckets") {
    d.kind = TuneDimension::Kind::kLengthBuckets;
    d.name = d.field = "length_buckets";
    parsed = parse_bucket_sets(entry, values, d.bucket_sets);
  } else {
    const NumericOption* f = find_numeric_option(written == "lanes" ? "num_lanes" : written);
    if (!f)
      return entry_error(entry, "unknown option " + quoted_excerpt(written) + "; " + known_names());
    d.name = f->name;
    d.field = field_of(f->name);
    parsed = values.find("..") != std::string_view::npos
                 ? parse_range(*f, written, entry, values)
                 : parse_numeric_list(*f, written, entry, values);
    if (parsed) {
      std::sort(parsed->begin(), parsed->end());
      // Values the field stores alike (max_wait_ms finer than a microsecond)
      // are one configuration: keep the first of each.
      const auto stored = [f](double v) {
        Options o;
        f->set(o, v);
        return f->get(o);
      };
      parsed->erase(std::unique(parsed->begin(), parsed->end(),
                                [&](double a, double b) { return stored(a) == stored(b); }),
                    parsed->end());
    }
  }
  if (!parsed) return parsed.error();
  d.values = std::move(*parsed);
  return d;
}

}  // namespace

void TuneDimension::apply(Options& o, size_t i) const {
  const double v = values[i];
  switch (kind) {
    case Kind::kStrategy: o.strategy = static_cast<StrategyKind>(static_cast<int>(v)); break;
    case Kind::kScheduling: o.scheduling = static_cast<Scheduling>(static_cast<int>(v)); break;
    case Kind::kPadding: o.padding = static_cast<Padding>(static_cast<int>(v)); break;
    case Kind::kLengthBuckets: o.length_buckets = bucket_sets[static_cast<size_t>(v)]; break;
    case Kind::kNumeric: find_numeric_option(name)->set(o, v); break;
  }
}

std::string TuneDimension::value_text(size_t i) const {
  const double v = values[i];
  switch (kind) {
    case Kind::kStrategy: return strategy_name(static_cast<StrategyKind>(static_cast<int>(v)));
    case Kind::kScheduling: return scheduling_name(static_cast<Scheduling>(static_cast<int>(v)));
    case Kind::kPadding: return padding_name(static_cast<Padding>(static_cast<int>(v)));
    case Kind::kLengthBuckets: {
      Options o;
      o.length_buckets = bucket_sets[static_cast<size_t>(v)];
      std::string text = length_buckets_text(o);
      std::replace(text.begin(), text.end(), ',', '/');
      return text;
    }
    case Kind::kNumeric: break;
  }
  return shortest(v);
}

Expected<TuneSpace> TuneSpace::parse(std::string_view text) {
  if (trim(text).empty()) {
    return invalid_argument(
        "the space is empty; give NAME=VALUES entries separated by commas, "
        "for example " +
        default_text(0));
  }
  TuneSpace space;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    const std::string_view entry = trim(text.substr(start, comma - start));
    if (entry.empty())
      return invalid_argument("an empty entry in the space " + quoted_excerpt(text, 200));
    auto d = parse_entry(entry);
    if (!d) return d.error();
    for (const TuneDimension& seen : space.dims_) {
      if (seen.field == d->field) {
        return entry_error(entry,
                           d->field + " is already searched by " + quoted_excerpt(seen.entry));
      }
    }
    space.dims_.push_back(std::move(*d));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return space;
}

std::string TuneSpace::default_text(uint32_t model_max_batch) {
  uint32_t cap = 256;
  if (model_max_batch > 0) cap = std::min(cap, model_max_batch);
  const std::string batch = cap == 1 ? "1" : "1.." + std::to_string(cap);
  return "max_batch_size=" + batch + ",max_wait_ms=0..20,strategy=fifo|adaptive,lanes=1..2";
}

TuneSpace TuneSpace::default_space(uint32_t model_max_batch) {
  return *parse(default_text(model_max_batch));  // always well formed
}

uint64_t TuneSpace::size() const {
  uint64_t n = 1;
  for (const TuneDimension& d : dims_) {
    if (d.size() != 0 && n > std::numeric_limits<uint64_t>::max() / d.size()) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= d.size();
  }
  return n;
}

std::string TuneSpace::text() const {
  std::string out;
  for (const TuneDimension& d : dims_) {
    if (!out.empty()) out += ',';
    out += d.name + '=';
    for (size_t i = 0; i < d.size(); ++i) out += (i ? "|" : "") + d.value_text(i);
  }
  return out;
}

std::string TuneSpace::padding_text(std::span<const uint32_t> sample) {
  if (sample.empty()) return {};
  std::vector<uint32_t> v(sample.begin(), sample.end());
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    return std::max<uint32_t>(1, v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]);
  };
  const uint32_t top = std::max<uint32_t>(1, v.back());
  const auto set_text = [&](std::vector<uint32_t> limits) {
    limits.push_back(top);
    std::sort(limits.begin(), limits.end());
    limits.erase(std::unique(limits.begin(), limits.end()), limits.end());
    if (limits.size() > kMaxLengthBuckets) {
      limits.erase(limits.begin(), limits.end() - static_cast<std::ptrdiff_t>(kMaxLengthBuckets));
    }
    std::string out;
    for (uint32_t l : limits) out += (out.empty() ? "" : "/") + std::to_string(l);
    return out;
  };
  std::vector<uint32_t> powers;
  for (uint32_t p = 1; p < top; p *= 2) {
    if (p >= at(0.1)) powers.push_back(p);
    if (p > UINT32_MAX / 2) break;
  }
  std::vector<std::string> sets = {set_text(powers), set_text({at(0.25), at(0.5), at(0.75)}),
                                   set_text({at(0.5)})};
  std::string out = "padding=longest|buckets|sorted,length_buckets=";
  std::vector<std::string> kept;
  for (const std::string& s : sets) {
    if (std::find(kept.begin(), kept.end(), s) != kept.end()) continue;
    out += (kept.empty() ? "" : "|") + s;
    kept.push_back(s);
  }
  return out;
}

std::vector<size_t> TuneSpace::canonical(std::span<const size_t> index, const Options& base) const {
  std::vector<size_t> out(index.begin(), index.end());
  if (combination(index, base).padding == Padding::kBuckets) return out;
  for (size_t d = 0; d < dims_.size(); ++d) {
    if (dims_[d].kind == TuneDimension::Kind::kLengthBuckets) out[d] = 0;
  }
  return out;
}

bool TuneSpace::searches(std::string_view field) const {
  return std::any_of(dims_.begin(), dims_.end(),
                     [field](const TuneDimension& d) { return d.field == field; });
}

Options TuneSpace::combination(std::span<const size_t> index, const Options& base,
                               std::optional<double> slo_p99_ms) const {
  Options o = base;
  for (size_t d = 0; d < dims_.size(); ++d) dims_[d].apply(o, index[d]);
  if (slo_p99_ms && o.strategy == StrategyKind::kAdaptive && !searches("target_p99_ms")) {
    o.target_p99_ms = *slo_p99_ms;
  }
  return o;
}

TuneEnumeration TuneSpace::for_each_until(const Options& base,
                                          const std::function<bool(const Options&)>& visit,
                                          std::optional<double> slo_p99_ms) const {
  TuneEnumeration e;
  for (const TuneDimension& d : dims_) {
    if (d.size() == 0) return e;
  }
  std::vector<size_t> index(dims_.size(), 0);
  for (;;) {
    const Options o = combination(index, base, slo_p99_ms);
    if (!o.validate()) {
      ++e.invalid;
    } else {
      ++e.visited;
      if (!visit(o)) {
        e.stopped = true;
        return e;
      }
    }
    // The odometer: the last dimension turns fastest.
    size_t d = dims_.size();
    while (d > 0 && ++index[d - 1] == dims_[d - 1].size()) index[--d] = 0;
    if (d == 0) return e;
  }
}

}  // namespace batchscope
