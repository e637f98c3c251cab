// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "runs/history_figures.h"

namespace batchscope {
namespace {

const char* const kColours[] = {"#1f5fbf", "#d9600b", "#2a9d4b", "#9b3fb5", "#b8322a", "#0f8b8d"};
const char* colour(size_t i) { return kColours[i % std::size(kColours)]; }

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, int decimals = 3) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  if (std::fabs(v) >= 100 || v == std::floor(v)) decimals = std::min(decimals, 1);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// A tick step of 1, 2 or 5 times a power of ten, giving about five ticks.
double tick_step(double range) {
  if (range <= 0 || !std::isfinite(range)) return 1;
  const double raw = range / 5;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

struct Series {
  std::string colour;
  std::vector<double> x, y;    // a step line; NaN y breaks it
  std::vector<double> lo, hi;  // a band under it, when both are filled
  std::string name;
};

// An SVG chart of step lines (and bands) over a shared x axis.
std::string line_chart(const std::vector<Series>& series, const std::string& x_label,
                       const std::string& y_label) {
  const double w = 620, h = 240, left = 56, right = 12, top = 12, bottom = 40;
  double x_max = 0, y_max = 0;
  for (const Series& s : series) {
    for (double x : s.x) x_max = std::max(x_max, x);
    for (double y : s.y)
      if (std::isfinite(y)) y_max = std::max(y_max, y);
    for (double y : s.hi)
      if (std::isfinite(y)) y_max = std::max(y_max, y);
  }
  if (x_max <= 0) x_max = 1;
  if (y_max <= 0) y_max = 1;
  const double ys = tick_step(y_max * 1.1), xs = tick_step(x_max);
  y_max = std::ceil(y_max * 1.1 / ys) * ys;
  // An end just short of a tick (a 0.997 s run) reaches it.
  if (const double up = std::ceil(x_max / xs) * xs; up - x_max < 0.1 * xs) x_max = up;
  auto px = [&](double x) { return left + (w - left - right) * x / x_max; };
  auto py = [&](double y) { return top + (h - top - bottom) * (1 - y / y_max); };
  std::string o = "<svg class=\"chart\" viewBox=\"0 0 " + num(w) + " " + num(h) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  for (double y = 0; y <= y_max + ys / 2; y += ys) {
    o += "<line x1=\"" + num(left) + "\" x2=\"" + num(w - right) + "\" y1=\"" + num(py(y)) +
         "\" y2=\"" + num(py(y)) + "\" class=\"grid\"/>";
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py(y) + 4) + "\" class=\"yt\">" + num(y) +
         "</text>";
  }
  for (double x = 0; x <= x_max + xs / 100; x += xs) {
    o += "<text x=\"" + num(px(x)) + "\" y=\"" + num(h - bottom + 16) + "\" class=\"xt\">" +
         num(x) + "</text>";
  }
  o += "<text x=\"" + num((left + w - right) / 2) + "\" y=\"" + num(h - 6) + "\" class=\"xl\">" +
       escape(x_label) + "</text>";
  o += "<text transform=\"translate(14 " + num((top + h - bottom) / 2) +
       ") rotate(-90)\" class=\"xl\">" + escape(y_label) + "</text>";
  for (const Series& s : series) {
    if (!s.lo.empty() && s.lo.size() == s.x.size()) {
      // The band as one polygon per unbroken stretch: along hi, back along lo.
      size_t i = 0;
      while (i < s.x.size()) {
        while (i < s.x.size() && !(std::isfinite(s.lo[i]) && std::isfinite(s.hi[i]))) ++i;
        size_t j = i;
        while (j < s.x.size() && std::isfinite(s.lo[j]) && std::isfinite(s.hi[j])) ++j;
        if (j > i + 1) {
          std::string pts;
          for (size_t k = i; k < j; ++k) pts += num(px(s.x[k])) + "," + num(py(s.hi[k])) + " ";
          for (size_t k = j; k-- > i;) pts += num(px(s.x[k])) + "," + num(py(s.lo[k])) + " ";
          o += "<polygon points=\"" + pts + "\" fill=\"" + s.colour + "\" fill-opacity=\"0.22\"/>";
        }
        i = j;
      }
    }
    std::string d;
    bool pen = false;
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!std::isfinite(s.y[k])) {
        pen = false;
        continue;
      }
      d += (pen ? " L" : " M") + num(px(s.x[k])) + " " + num(py(s.y[k]));
      pen = true;
    }
    if (!d.empty())
      o += "<path d=\"" + d + "\" stroke=\"" + s.colour +
           "\" fill=\"none\" stroke-width=\"2\"><title>" + escape(s.name) + "</title></path>";
  }
  o += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(w - left - right) +
       "\" height=\"" + num(h - top - bottom) + "\" class=\"frame\"/></svg>";
  return o;
}

// Step points over a run's windows, closed at the last window's end.
template <class F>
void steps(std::span<const RunWindow> windows, F value, std::vector<double>& x,
           std::vector<double>& y) {
  for (const RunWindow& w : windows) {
    x.push_back(w.start_s);
    y.push_back(value(w));
    x.push_back(w.start_s + w.length_s);
    y.push_back(value(w));
  }
}

std::string batch_chart(const std::vector<RunSummary>& sums) {
  std::set<uint32_t> sizes;
  double top = 0;
  std::vector<double> totals;
  for (const RunSummary& s : sums) {
    double total = 0;
    for (const auto& [b, n] : s.batch_histogram) {
      sizes.insert(b);
      total += static_cast<double>(n);
    }
    totals.push_back(total > 0 ? total : 1);
  }
  for (size_t r = 0; r < sums.size(); ++r)
    for (const auto& [b, n] : sums[r].batch_histogram) top = std::max(top, 100.0 * n / totals[r]);
  if (sizes.empty()) return "<p class=\"note\">No batches were recorded.</p>";
  const double w = 620, h = 220, left = 48, bottom = 36, topm = 10;
  const double slot = (w - left - 8) / static_cast<double>(sizes.size());
  const double bar = std::max(1.0, slot * 0.8 / static_cast<double>(sums.size()));
  const double ys = tick_step(top * 1.1);
  // A share stops at 100%: one size that took every batch tops the axis.
  const double y_max = std::min(std::ceil(top * 1.1 / ys) * ys, std::max(100.0, top));
  auto py = [&](double v) { return topm + (h - topm - bottom) * (1 - v / y_max); };
  std::string o = "<svg class=\"chart\" viewBox=\"0 0 " + num(w) + " " + num(h) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  for (double v = 0; v <= y_max + ys / 2; v += ys) {
    o += "<line x1=\"" + num(left) + "\" x2=\"" + num(w - 8) + "\" y1=\"" + num(py(v)) +
         "\" y2=\"" + num(py(v)) + "\" class=\"grid\"/><text x=\"" + num(left - 6) + "\" y=\"" +
         num(py(v) + 4) + "\" class=\"yt\">" + num(v) + "%</text>";
  }
  size_t i = 0;
  const size_t label_every = std::max<size_t>(1, sizes.size() / 16);
  for (uint32_t b : sizes) {
    const double x0 = left + slot * static_cast<double>(i) + slot * 0.1;
    for (size_t r = 0; r < sums.size(); ++r) {
      auto it = sums[r].batch_histogram.find(b);
      if (it == sums[r].batch_histogram.end()) continue;
      const double v = 100.0 * static_cast<double>(it->second) / totals[r];
      o += "<rect x=\"" + num(x0 + bar * static_cast<double>(r)) + "\" y=\"" + num(py(v)) +
           "\" width=\"" + num(bar) + "\" height=\"" + num(py(0) - py(v)) + "\" fill=\"" +
           colour(r) + "\"><title>batch " + std::to_string(b) + ": " + num(v, 1) +
           "% of batches</title></rect>";
    }
    if (i % label_every == 0)
      o += "<text x=\"" + num(x0 + slot * 0.4) + "\" y=\"" + num(h - bottom + 14) +
           "\" class=\"xt\">" + std::to_string(b) + "</text>";
    ++i;
  }
  o += "<text x=\"" + num(w / 2) + "\" y=\"" + num(h - 4) +
       "\" class=\"xl\">batch size (share of batches)</text></svg>";
  return o;
}

// The q-quantile (0..1) of `v`, sorted in place; NaN when empty.
double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

// A generation run's TTFT and ITL per window of its intended send times
// (about 40 windows): p50 lines with p50..p99 bands.
void gen_series(const std::vector<HistoryGenRequest>& reqs, const char* colour_text,
                const std::string& name, Series& ttft, Series& itl) {
  double end = 0;
  for (const HistoryGenRequest& r : reqs)
    end = std::max(end, std::chrono::duration<double>(r.intended).count());
  const double w = std::max(end / 40.0, 0.1);
  const size_t n = static_cast<size_t>(end / w) + 1;
  std::vector<std::vector<double>> t(n), g(n);
  for (const HistoryGenRequest& r : reqs) {
    const size_t k =
        std::min(n - 1, static_cast<size_t>(std::chrono::duration<double>(r.intended).count() / w));
    if (r.first != kNever) {
      const double sent = std::chrono::duration<double>(r.intended).count();
      const double first = std::chrono::duration<double>(r.first.time_since_epoch()).count();
      t[k].push_back((first - sent) * 1000.0);
    }
    for (Duration d : r.gaps) g[k].push_back(std::chrono::duration<double, std::milli>(d).count());
  }
  ttft.colour = itl.colour = colour_text;
  ttft.name = name + " TTFT p50";
  itl.name = name + " ITL p50";
  for (size_t k = 0; k < n; ++k) {
    for (double x : {w * static_cast<double>(k), w * static_cast<double>(k + 1)}) {
      ttft.x.push_back(x);
      itl.x.push_back(x);
      ttft.y.push_back(quantile(t[k], 0.5));
      ttft.lo.push_back(ttft.y.back());
      ttft.hi.push_back(quantile(t[k], 0.99));
      itl.y.push_back(quantile(g[k], 0.5));
      itl.lo.push_back(itl.y.back());
      itl.hi.push_back(quantile(g[k], 0.99));
    }
  }
}

// Each run's mean time in each stage as a bar of segments, one a stage (the
// means add up to the time from arrival to the end of the model's run);
// empty where no run kept stage times.
std::string stage_chart(const std::vector<HistoryRun>& runs, const std::vector<RunSummary>& sums) {
  static const char* const kStageColours[kRunStageCount] = {"#b8b83a", "#d9a400", "#3a9a4c",
                                                            "#9a4ca6", "#cc5533", "#7a5230"};
  double top = 0;
  bool present[kRunStageCount] = {};
  for (const RunSummary& s : sums) {
    double sum = 0;
    for (const StageFigures& f : s.stages) {
      sum += f.mean_ms;
      present[static_cast<int>(f.stage)] = true;
    }
    top = std::max(top, sum);
  }
  if (top <= 0) return {};
  const double w = 620, left = 60, right = 70, row = 32;
  const double h = 40 + row * static_cast<double>(sums.size());
  auto px = [&](double ms) { return left + (w - left - right) * ms / top; };
  std::string o = "<svg class=\"chart\" viewBox=\"0 0 " + num(w) + " " + num(h) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  for (size_t r = 0; r < sums.size(); ++r) {
    const double y = 8 + row * static_cast<double>(r);
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + 15) +
         "\" class=\"yt\" style=\"fill:" + colour(r) + "\">run " + std::to_string(runs[r].id) +
         "</text>";
    double at = 0;
    for (const StageFigures& f : sums[r].stages) {
      const std::string label(stage_label(f.stage));
      o += "<rect x=\"" + num(px(at)) + "\" y=\"" + num(y) + "\" width=\"" +
           num(px(at + f.mean_ms) - px(at)) + "\" height=\"" + num(row - 8) + "\" fill=\"" +
           kStageColours[static_cast<int>(f.stage)] + "\"><title>" + label + ": mean " +
           num(f.mean_ms) + " ms, p50 " + num(f.p50_ms) + ", p99 " + num(f.p99_ms) +
           "</title></rect>";
      at += f.mean_ms;
    }
    if (at > 0)
      o += "<text x=\"" + num(px(at) + 4) + "\" y=\"" + num(y + 15) + "\" class=\"lt\">" +
           num(at, 2) + " ms</text>";
  }
  // The legend: each stage's colour and name, of those any run went through.
  double lx = 8;
  const double ly = h - 10;
  for (int i = 0; i < kRunStageCount; ++i) {
    if (!present[i]) continue;
    const std::string label(stage_label(static_cast<RunStage>(i)));
    o += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 9) +
         "\" width=\"10\" height=\"10\" fill=\"" + kStageColours[i] + "\"/><text x=\"" +
         num(lx + 14) + "\" y=\"" + num(ly) + "\" class=\"lt\">" + label + "</text>";
    lx += 24 + 6.5 * static_cast<double>(label.size());
  }
  return o + "</svg>";
}

std::string run_name(const HistoryRun& r) { return "run " + std::to_string(r.id) + ": " + r.label; }

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;margin:24px auto;max-width:1300px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.meta{color:#5b6475;margin:0 0 12px}.legend span{display:inline-block;margin-right:18px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:6px;vertical-align:middle;border-radius:2px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:18px}
.charts figure{margin:0;border:1px solid #dde2ea;border-radius:6px;padding:8px 10px}
figcaption{font-weight:600;margin-bottom:4px}.chart{width:100%;height:auto}
.grid{stroke:#e6e9ef;stroke-width:1}.frame{fill:none;stroke:#9aa3b2;stroke-width:1}
.yt{font-size:11px;fill:#5b6475;text-anchor:end}.xt{font-size:11px;fill:#5b6475;text-anchor:middle}
.lt{font-size:11px;fill:#5b6475;text-anchor:start}
.xl{font-size:12px;fill:#2d3545;text-anchor:middle}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #e6e9ef;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}thead th{background:#f3f5f9}
table.ctx th,table.ctx td{text-align:left;max-width:520px;overflow-wrap:anywhere}td.diff{background:#fff4d6}.note{color:#5b6475}.unfinished{color:#b8322a;font-weight:600}
)css";

}  // namespace

std::string run_report_html(const std::vector<HistoryRun>& runs, const std::string& title,
                            const std::string& made_by, const std::string& generated,
                            const std::vector<std::vector<HistoryGenRequest>>& generation) {
  std::vector<RunSummary> sums;
  for (const HistoryRun& r : runs) sums.push_back(summary_from_json(r.summary));
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  o += "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">";
  o += "<title>" + escape(title) + "</title><style>" + kStyle + "</style></head><body>\n";
  o += "<h1>" + escape(title) + "</h1><p class=\"meta\">Written by " + escape(made_by) + ", " +
       escape(generated) + " UTC, " + std::to_string(runs.size()) + " run(s)</p>";
  o += "<p class=\"legend\">";
  for (size_t i = 0; i < runs.size(); ++i) {
    o += "<span><i style=\"background:" + std::string(colour(i)) + "\"></i>" +
         escape(run_name(runs[i])) + " (" + escape(runs[i].kind) + ", " + escape(runs[i].model) +
         ", " + escape(runs[i].started_at) + ")";
    if (!runs[i].finished()) o += " <span class=\"unfinished\">unfinished</span>";
    o += "</span>";
  }
  o += "</p>\n<div class=\"charts\">";

  std::vector<Series> fans, rates;
  for (size_t i = 0; i < runs.size(); ++i) {
    Series f;
    f.colour = colour(i);
    f.name = run_name(runs[i]) + " p50";
    std::vector<double> x90, x99;
    steps(
        sums[i].windows, [](const RunWindow& w) { return w.ok ? w.latency.p50_ms : NAN; }, f.x,
        f.y);
    steps(
        sums[i].windows, [](const RunWindow& w) { return w.ok ? w.latency.p90_ms : NAN; }, x90,
        f.lo);
    steps(
        sums[i].windows, [](const RunWindow& w) { return w.ok ? w.latency.p99_ms : NAN; }, x99,
        f.hi);
    fans.push_back(std::move(f));
    Series t;
    t.colour = colour(i);
    t.name = run_name(runs[i]) + " throughput";
    // A short last window's rate is the drain of what was in flight: left out.
    steps(
        rate_windows(sums[i]), [](const RunWindow& w) { return w.throughput_rps; }, t.x, t.y);
    rates.push_back(std::move(t));
  }
  o += "<figure><figcaption>Latency over the run: p50 (line), p90 to p99 (band)</figcaption>" +
       line_chart(fans, "seconds since the run started", "latency (ms)") + "</figure>";
  o += "<figure><figcaption>Throughput over the run</figcaption>" +
       line_chart(rates, "seconds since the run started", "answers per second") + "</figure>";
  o += "<figure><figcaption>Batch sizes</figcaption>" + batch_chart(sums) + "</figure>";
  if (const std::string stages = stage_chart(runs, sums); !stages.empty()) {
    o += "<figure><figcaption>Where the time went: each stage's mean (hover for p50 and "
         "p99)</figcaption>" +
         stages + "</figure>";
  }
  std::vector<Series> ttfts, itls;
  for (size_t i = 0; i < runs.size() && i < generation.size(); ++i) {
    if (generation[i].empty()) continue;
    Series t, g;
    gen_series(generation[i], colour(i), run_name(runs[i]), t, g);
    ttfts.push_back(std::move(t));
    itls.push_back(std::move(g));
  }
  if (!ttfts.empty()) {
    o += "<figure><figcaption>Time to first token: p50 (line), p50 to p99 (band)</figcaption>" +
         line_chart(ttfts, "seconds since the run started (by send time)", "TTFT (ms)") +
         "</figure>";
    o += "<figure><figcaption>Inter-token latency: p50 (line), p50 to p99 (band)</figcaption>" +
         line_chart(itls, "seconds since the run started (by send time)", "ITL (ms)") + "</figure>";
  }
  o += "</div>\n";

  // Figures side by side.
  std::vector<std::vector<Figure>> figs;
  std::vector<std::string> names;
  for (const HistoryRun& r : runs) {
    figs.push_back(summary_figures(r.summary));
    for (const Figure& f : figs.back())
      if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
  }
  auto header = [&] {
    std::string t = "<thead><tr><th></th>";
    for (size_t i = 0; i < runs.size(); ++i)
      t += "<th style=\"color:" + std::string(colour(i)) + "\">run " + std::to_string(runs[i].id) +
           "</th>";
    return t + "</tr></thead>";
  };
  o += "<h2>Figures</h2><table>" + header() + "<tbody>";
  for (const std::string& n : names) {
    o += "<tr><td>" + escape(n) + "</td>";
    for (const auto& f : figs) {
      auto v = figure(f, n);
      o += "<td>" + (v ? num(*v) : std::string("-")) + "</td>";
    }
    o += "</tr>";
  }
  o += "</tbody></table>";

  // Options, traffic and context, a row a key; a row whose values differ is marked.
  std::map<std::string, std::vector<std::string>> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const ContextDiff& d : compare_context(runs[i], HistoryRun{})) {
      auto& row = rows[d.key];
      row.resize(runs.size(), "-");
      row[i] = d.a;
    }
    rows["options"].resize(runs.size(), "-");
    rows["options"][i] = options_text(runs[i]);
    rows["duration_s"].resize(runs.size(), "-");
    rows["duration_s"][i] = num(runs[i].config.duration_s);
    rows["seed"].resize(runs.size(), "-");
    rows["seed"][i] = std::to_string(runs[i].config.seed);
  }
  o += "<h2>What each ran on</h2><table class=\"ctx\">" + header() + "<tbody>";
  for (auto& [key, values] : rows) {
    if (key.rfind("options.", 0) == 0) continue;  // in the "options" row
    values.resize(runs.size(), "-");
    const std::string& first = values[0];
    const bool differs = std::any_of(values.begin(), values.end(),
                                     [&first](const std::string& v) { return v != first; });
    o += "<tr><td>" + escape(key) + "</td>";
    for (const std::string& v : values)
      o += std::string("<td") + (differs ? " class=\"diff\"" : "") + ">" + escape(v) + "</td>";
    o += "</tr>";
  }
  o += "</tbody></table><p class=\"note\">A marked row differs between the runs.</p>";
  o += "</body></html>\n";
  return o;
}

}  // namespace batchscope
