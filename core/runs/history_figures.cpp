// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/history_figures.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace batchscope {
namespace {

using nlohmann::json;

json parse(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

// The number at `path` ("latency_ms/p99"), if it is one.
std::optional<double> number_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object()) return std::nullopt;
    auto it = at->find(key);
    if (it == at->end()) return std::nullopt;
    at = &*it;
  }
  if (!at->is_number()) return std::nullopt;
  return at->get<double>();
}

// Flattens an object into "prefix.key" = text, for the context comparison.
void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_string()) {
    out[prefix] = j.get<std::string>();
  } else {
    out[prefix] = j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

std::map<std::string, std::string> context_of(const HistoryRun& r) {
  std::map<std::string, std::string> m;
  flatten(parse(r.context), "", m);
  flatten(parse(options_to_json(r.config.options)), "options", m);
  m["traffic"] = r.config.pattern;
  m["target"] = r.config.target;
  m["model.name"] = r.model;
  return m;
}

Error bad_import(const std::string& what) {
  return invalid_argument("not a bench --json summary: " + what);
}

}  // namespace

std::string with_stop_note(const std::string& summary_json, const std::string& note) {
  json j = parse(summary_json);
  j["stopped"] = note;
  return j.dump();
}

std::string stop_note(const std::string& summary_json) {
  const json j = parse(summary_json);
  auto it = j.find("stopped");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<Figure> summary_figures(const std::string& summary_json) {
  const json j = parse(summary_json);
  struct Source {
    const char* name;
    std::initializer_list<const char*> path;
  };
  static const Source kSources[] = {
      {"sent", {"sent"}},
      {"ok", {"ok"}},
      {"rejected", {"rejected"}},
      {"timed_out", {"timed_out"}},
      {"errors", {"errors"}},
      {"throughput_rps", {"throughput_rps"}},
      {"p50_ms", {"latency_ms", "p50"}},
      {"p90_ms", {"latency_ms", "p90"}},
      {"p95_ms", {"latency_ms", "p95"}},
      {"p99_ms", {"latency_ms", "p99"}},
      {"p999_ms", {"latency_ms", "p999"}},
      {"max_ms", {"latency_ms", "max"}},
      {"mean_ms", {"latency_ms", "mean"}},
      {"batch_mean", {"batch_size", "mean"}},
      {"depth_mean", {"queue_depth", "mean"}},
      {"depth_max", {"queue_depth", "max"}},
      {"padding_waste", {"padding", "waste"}},
      {"lag_p99_ms", {"send_lag_ms", "p99"}},
  };
  std::vector<Figure> out;
  for (const Source& s : kSources) {
    if (auto v = number_at(j, s.path)) out.push_back({s.name, *v});
  }
  // The engine's stages: "model_p50_ms", "model_p99_ms", ...
  for (int i = 0; i < kRunStageCount; ++i) {
    const std::string key(stage_key(static_cast<RunStage>(i)));
    for (const char* q : {"p50", "p99"}) {
      if (auto v = number_at(j, {"stages_ms", key.c_str(), q}))
        out.push_back({key + "_" + q + "_ms", *v});
    }
  }
  // A generation run's (gen_summary_json): end-to-end latency and requests a
  // second under the names a tensor run uses, then tokens, TTFT and ITL.
  if (out.empty() && j.contains("summary") && j["summary"].is_object()) {
    const json& g = j["summary"];
    struct GenSource {
      const char* name;
      std::initializer_list<const char*> path;
    };
    static const GenSource kGen[] = {
        {"sent", {"sent"}},
        {"ok", {"ok"}},
        {"errors", {"failed"}},
        {"throughput_rps", {"requests_per_s"}},
        {"p50_ms", {"e2e_ms", "p50"}},
        {"p99_ms", {"e2e_ms", "p99"}},
        {"tokens_per_s", {"tokens_per_s"}},
        {"ttft_p50_ms", {"ttft_ms", "p50"}},
        {"ttft_p99_ms", {"ttft_ms", "p99"}},
        {"itl_p50_ms", {"itl_ms", "p50"}},
        {"itl_p99_ms", {"itl_ms", "p99"}},
        {"goodput_rps", {"goodput_rps"}},
        {"preemptions", {"preemptions"}},
        {"decodes_per_step", {"decodes_per_step"}},
    };
    for (const GenSource& s : kGen) {
      if (auto v = number_at(g, s.path)) out.push_back({s.name, *v});
    }
  }
  // A tune's result: its best configuration's figures, measured where it
  // was confirmed live, else predicted; and how much it searched.
  if (out.empty() && j.contains("best") && j["best"].is_object()) {
    const json& best = j["best"];
    const char* side =
        best.contains("measured") && best["measured"].is_object() ? "measured" : "predicted";
    for (const char* name : {"sent", "ok", "throughput_rps", "p50_ms", "p99_ms"}) {
      if (auto v = number_at(best, {side, name})) out.push_back({name, *v});
    }
    for (const char* name : {"space_size", "evaluated"}) {
      if (auto v = number_at(j, {name})) out.push_back({name, *v});
    }
  }
  return out;
}

namespace {

double num(const json& j, std::initializer_list<const char*> path) {
  return number_at(j, path).value_or(0.0);
}

template <class T>
T whole(const json& j, std::initializer_list<const char*> path) {
  const double v = num(j, path);
  return v > 0 && v < 1.8e19 ? static_cast<T>(v) : T{0};
}

RunLatency latency_of(const json& j) {
  RunLatency l;
  l.p50_ms = num(j, {"latency_ms", "p50"});
  l.p90_ms = num(j, {"latency_ms", "p90"});
  l.p95_ms = num(j, {"latency_ms", "p95"});
  l.p99_ms = num(j, {"latency_ms", "p99"});
  l.p999_ms = num(j, {"latency_ms", "p999"});
  l.max_ms = num(j, {"latency_ms", "max"});
  l.mean_ms = num(j, {"latency_ms", "mean"});
  return l;
}

}  // namespace

RunSummary summary_from_json(const std::string& summary_json) {
  const json j = parse(summary_json);
  RunSummary s;
  // A generation run's (gen_summary_json): its figures are under "summary",
  // the end-to-end latency standing for a request's latency.
  if (!j.contains("sent") && j.contains("summary") && j["summary"].is_object()) {
    const json& g = j["summary"];
    s.sent = whole<uint64_t>(g, {"sent"});
    s.ok = whole<uint64_t>(g, {"ok"});
    s.errors = whole<uint64_t>(g, {"failed"});
    s.duration_s = num(g, {"duration_s"});
    s.throughput_rps = num(g, {"requests_per_s"});
    s.latency.p50_ms = num(g, {"e2e_ms", "p50"});
    s.latency.p90_ms = num(g, {"e2e_ms", "p90"});
    s.latency.p99_ms = num(g, {"e2e_ms", "p99"});
    s.latency.max_ms = num(g, {"e2e_ms", "max"});
    s.latency.mean_ms = num(g, {"e2e_ms", "mean"});
    return s;
  }
  s.sent = whole<uint64_t>(j, {"sent"});
  s.ok = whole<uint64_t>(j, {"ok"});
  s.rejected = whole<uint64_t>(j, {"rejected"});
  s.timed_out = whole<uint64_t>(j, {"timed_out"});
  s.errors = whole<uint64_t>(j, {"errors"});
  s.duration_s = num(j, {"duration_s"});
  s.throughput_rps = num(j, {"throughput_rps"});
  s.latency = latency_of(j);
  s.lag_p50_ms = num(j, {"send_lag_ms", "p50"});
  s.lag_p99_ms = num(j, {"send_lag_ms", "p99"});
  s.lag_max_ms = num(j, {"send_lag_ms", "max"});
  s.batch_mean = num(j, {"batch_size", "mean"});
  if (auto h = j.find("batch_size"); h != j.end() && h->is_object()) {
    if (auto hist = h->find("histogram"); hist != h->end() && hist->is_object()) {
      for (const auto& [size, count] : hist->items()) {
        char* end = nullptr;
        const unsigned long b = std::strtoul(size.c_str(), &end, 10);
        if (end && *end == '\0' && b > 0 && b <= 0xffffffffUL && count.is_number_unsigned())
          s.batch_histogram[static_cast<uint32_t>(b)] = count.get<uint64_t>();
      }
    }
  }
  s.depth_mean = num(j, {"queue_depth", "mean"});
  s.depth_max = whole<uint32_t>(j, {"queue_depth", "max"});
  s.padding_waste = num(j, {"padding", "waste"});
  s.real_length = whole<uint64_t>(j, {"padding", "real"});
  s.padded_length = whole<uint64_t>(j, {"padding", "padded"});
  for (int i = 0; i < kRunStageCount; ++i) {
    const RunStage stage = static_cast<RunStage>(i);
    const std::string key(stage_key(stage));
    if (!number_at(j, {"stages_ms", key.c_str(), "p50"})) continue;
    StageFigures f;
    f.stage = stage;
    f.count = whole<uint64_t>(j, {"stages_ms", key.c_str(), "count"});
    f.p50_ms = num(j, {"stages_ms", key.c_str(), "p50"});
    f.p99_ms = num(j, {"stages_ms", key.c_str(), "p99"});
    f.mean_ms = num(j, {"stages_ms", key.c_str(), "mean"});
    s.stages.push_back(f);
  }
  if (auto w = j.find("windows"); w != j.end() && w->is_array()) {
    for (const json& x : *w) {
      if (!x.is_object()) continue;
      RunWindow r;
      r.start_s = num(x, {"start_s"});
      r.length_s = num(x, {"length_s"});
      r.sent = whole<uint64_t>(x, {"sent"});
      r.ok = whole<uint64_t>(x, {"ok"});
      r.rejected = whole<uint64_t>(x, {"rejected"});
      r.timed_out = whole<uint64_t>(x, {"timed_out"});
      r.errors = whole<uint64_t>(x, {"errors"});
      r.throughput_rps = num(x, {"throughput_rps"});
      r.latency = latency_of(x);
      r.batch_mean = num(x, {"batch_mean"});
      r.batch_max = whole<uint32_t>(x, {"batch_max"});
      r.depth_mean = num(x, {"depth_mean"});
      r.depth_max = whole<uint32_t>(x, {"depth_max"});
      s.windows.push_back(r);
    }
  }
  return s;
}

std::optional<double> figure(const std::vector<Figure>& figures, const std::string& name) {
  for (const Figure& f : figures) {
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::vector<FigureDiff> compare_figures(const HistoryRun& a, const HistoryRun& b) {
  const auto fa = summary_figures(a.summary), fb = summary_figures(b.summary);
  std::vector<FigureDiff> out;
  auto add = [&](const std::string& name) {
    for (const FigureDiff& d : out) {
      if (d.name == name) return;
    }
    out.push_back({name, figure(fa, name), figure(fb, name)});
  };
  for (const Figure& f : fa) add(f.name);
  for (const Figure& f : fb) add(f.name);
  return out;
}

std::string options_text(const HistoryRun& r) {
  if (r.generative()) return describe_generation(r.config.options);
  std::string text = describe(r.config.options);
  const json ctx = parse(r.context);
  const auto py = ctx.find("python");
  const bool pool = py != ctx.end() && py->is_object() && py->value("preprocess", false);
  if (pool && text.find(" preprocess_workers=") == std::string::npos) {
    // describe() puts it after num_lanes, the last of the always-named options.
    const std::string lanes = " num_lanes=" + std::to_string(r.config.options.num_lanes);
    const size_t at = text.find(lanes);
    const std::string workers =
        " preprocess_workers=" + std::to_string(r.config.options.preprocess_workers);
    if (at == std::string::npos) {
      text += workers;
    } else {
      text.insert(at + lanes.size(), workers);
    }
  }
  return text;
}

std::vector<ContextDiff> compare_context(const HistoryRun& a, const HistoryRun& b) {
  const auto ca = context_of(a), cb = context_of(b);
  std::vector<ContextDiff> out;
  for (const auto& [k, v] : ca) {
    auto it = cb.find(k);
    const std::string other = it == cb.end() ? "-" : it->second;
    if (other != v) out.push_back({k, v, other});
  }
  for (const auto& [k, v] : cb) {
    if (!ca.count(k)) out.push_back({k, "-", v});
  }
  return out;
}

namespace {

// A generation bench's summary: {"config": {pattern, workload, target, model,
// options (text), seed}, "summary": {sent, ok, ..., ttft_ms, itl_ms, ...}}.
Expected<HistoryRun> import_generation(const json& j) {
  const json& c = j["config"];
  const json& g = j["summary"];
  for (const char* key : {"sent", "ok", "tokens_per_s"}) {
    if (!g.contains(key) || !g[key].is_number())
      return bad_import(std::string("its \"summary\" has no number \"") + key + "\"");
  }
  if (!g.contains("ttft_ms") || !g["ttft_ms"].is_object())
    return bad_import("its \"summary\" has no object \"ttft_ms\"");
  auto text_of = [&](const char* key) -> std::string {
    auto it = c.find(key);
    return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  HistoryRun r;
  r.kind = "generation";
  r.model = text_of("model");
  r.config.model = r.model;
  r.config.target = text_of("target");
  r.config.pattern = text_of("pattern");
  if (auto s = number_at(c, {"seed"}); s && *s >= 0 && *s < 1.8e19)
    r.config.seed = static_cast<uint64_t>(*s);
  if (auto d = number_at(g, {"duration_s"}); d && *d >= 0 && *d < 1e9) r.config.duration_s = *d;
  r.label = r.config.pattern + " -> " + r.config.target + " (imported)";
  r.summary = j.dump(-1, ' ', false, json::error_handler_t::replace);
  r.started_at = utc_now();
  r.finished_at = r.started_at;
  if (auto sent = number_at(g, {"sent"}); *sent >= 0 && *sent < 1.8e19)
    r.requests_seen = static_cast<uint64_t>(*sent);
  return r;
}

}  // namespace

Expected<HistoryRun> import_bench_json(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_import("the file is not JSON");
  if (!j.is_object()) return bad_import("the top level is not an object");
  if (j.contains("summary") && j["summary"].is_object() && j.contains("config") &&
      j["config"].is_object())
    return import_generation(j);
  for (const char* key : {"sent", "ok", "throughput_rps"}) {
    if (!j.contains(key) || !j[key].is_number())
      return bad_import(std::string("it has no number \"") + key + "\"");
  }
  if (!j.contains("latency_ms") || !j["latency_ms"].is_object())
    return bad_import("it has no object \"latency_ms\"");
  if (!j.contains("config") || !j["config"].is_object())
    return bad_import("it has no object \"config\"");
  const json& c = j["config"];
  auto text_of = [](const json& o, const char* key) -> std::string {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  HistoryRun r;
  r.kind = "bench";
  r.model = text_of(c, "model");
  r.config.model = r.model;
  r.config.target = text_of(c, "target");
  r.config.pattern = text_of(j, "pattern");
  if (auto d = number_at(c, {"duration_s"}); d && *d >= 0 && *d < 1e9) r.config.duration_s = *d;
  if (auto s = number_at(c, {"seed"}); s && *s >= 0 && *s < 1.8e19)
    r.config.seed = static_cast<uint64_t>(*s);
  r.config.options =
      options_from_history_json(c.dump(-1, ' ', false, json::error_handler_t::replace));
  r.label = r.config.pattern + " -> " + r.config.target + " (imported)";
  r.summary = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (auto it = j.find("context"); it != j.end() && it->is_object())
    r.context = it->dump(-1, ' ', false, json::error_handler_t::replace);
  r.started_at = text_of(j, "started_at");
  if (r.started_at.empty()) r.started_at = utc_now();
  r.finished_at = r.started_at;
  if (auto sent = number_at(j, {"sent"}); *sent >= 0 && *sent < 1.8e19)
    r.requests_seen = static_cast<uint64_t>(*sent);
  return r;
}

}  // namespace batchscope
