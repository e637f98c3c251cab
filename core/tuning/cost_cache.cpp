// SPDX-License-Identifier: GPL-3.0-or-later
#include "tuning/cost_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/text_out.h"

namespace batchscope {

namespace {

using Json = nlohmann::json;

// FNV-1a, 64 bits: a file name, not a fingerprint (the file holds its key).
uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The machine facts as one canonical text (keys sorted), whatever their order.
std::string canonical(const std::string& json_object) {
  try {
    return Json::parse(json_object).dump();
  } catch (const Json::exception&) {
    return json_object;
  }
}

// A JSON value as a message quotes it, cut short.
std::string shown(const Json& v) {
  std::string s = v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Where `here` and `there` differ, "name \"a\" here \"b\"" for each key,
// nested keys joined with '.'.
void differences(const Json& here, const Json& there, const std::string& at,
                 std::vector<std::string>& out) {
  if (here.is_object() && there.is_object()) {
    for (auto it = there.begin(); it != there.end(); ++it) {
      const auto mine = here.find(it.key());
      const std::string name = at.empty() ? it.key() : at + "." + it.key();
      if (mine == here.end()) {
        out.push_back(name + " " + shown(*it) + " (not known here)");
      } else {
        differences(*mine, *it, name, out);
      }
    }
    for (auto it = here.begin(); it != here.end(); ++it) {
      if (!there.contains(it.key())) {
        out.push_back((at.empty() ? it.key() : at + "." + it.key()) + " not recorded there");
      }
    }
    return;
  }
  if (here != there) out.push_back(at + " " + shown(there) + ", here " + shown(here));
}

std::string list_of(const std::vector<std::string>& v, size_t most = 3) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < most; ++i) s += (i ? "; " : "") + v[i];
  if (v.size() > most) s += "; and " + std::to_string(v.size() - most) + " more";
  return s;
}

// A string member of a file's object, or "" where it is missing or not a
// string (Json::value() would throw on another type).
std::string text_at(const Json& o, const char* name) {
  const auto it = o.find(name);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string CostKey::id() const {
  uint64_t h = fnv1a(model_id);
  h = fnv1a("\n" + device, h);
  h = fnv1a("\n" + canonical(machine), h);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string CostKey::json() const {
  std::string out = "{\"model\":";
  append_json_string(out, model);
  out += ",\"model_id\":";
  append_json_string(out, model_id);
  out += ",\"device\":";
  append_json_string(out, device);
  out += ",\"machine\":" + canonical(machine.empty() ? "{}" : machine) + "}";
  return out;
}

std::string cost_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/batchscope/costs";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/batchscope/costs";
  return {};
}

std::string cost_cache_path(const CostKey& key, const std::string& dir) {
  std::string name;
  for (char c : key.model) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    name.push_back(plain ? c : '_');
  }
  if (name.empty() || name[0] == '.') name = "model" + name;
  return dir + "/" + name.substr(0, 64) + "-" + key.id() + ".json";
}

Status check_made_for(const std::string& text, const CostKey& key, const std::string& path) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception&) {
    return invalid_argument(path + " is not JSON, so not a cost file");
  }
  if (!j.is_object() || text_at(j, "format") != "batchscope-cost") {
    return invalid_argument(path + " is not a cost file (no \"format\": \"batchscope-cost\")");
  }
  const auto v = j.find("version");
  const int64_t version = v != j.end() && v->is_number_integer() ? v->get<int64_t>() : 1;
  const auto made = j.find("made_for");
  if (version < 3 || made == j.end() || !made->is_object()) {
    return invalid_argument(path + " is stale: version " + std::to_string(version) +
                            " with no \"made_for\", written before costs were kept per model "
                            "and machine");
  }
  const Json want = Json::parse(key.json());
  if (text_at(*made, "model_id") != key.model_id) {
    return invalid_argument(path + " is stale: it was made for " +
                            shown(text_at(*made, "model_id")) + ", and the model is now " +
                            shown(key.model_id) + " (the file changed)");
  }
  if (text_at(*made, "device") != key.device) {
    return invalid_argument(path + " was made on device " + shown(text_at(*made, "device")) +
                            ", not " + shown(key.device));
  }
  std::vector<std::string> diff;
  differences(want.at("machine"), made->value("machine", Json::object()), "", diff);
  if (!diff.empty()) {
    return invalid_argument(path + " was made on another machine (" + list_of(diff) + ")");
  }
  return Status::Ok();
}

Expected<std::optional<CostModel>> read_cached_cost(const std::string& path, const CostKey& key) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<CostModel>();
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec || bytes > CostModel::kMaxFileBytes) {
    auto m = CostModel::from_file(path);  // says which
    if (!m) return m.error();
    return invalid_argument("cannot read " + path);
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<size_t>(bytes), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
    return invalid_argument("cannot read " + path);
  }
  if (Status s = check_made_for(text, key, path); !s) return s.error();
  auto m = CostModel::from_profile_json(text);
  if (!m) return invalid_argument(path + ": " + m.error().message);
  return std::optional<CostModel>(std::move(*m));
}

namespace {

// Writes `text` at `path` through a temporary file renamed over it, making
// its folder.
Status write_whole(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path target(path);
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) {
    return invalid_argument("cannot make " + target.parent_path().string() + ": " + ec.message());
  }
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text << "\n";
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return invalid_argument("cannot write " + tmp);
    }
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return invalid_argument("cannot write " + path + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace

Status write_cached_cost(const std::string& path, const CostKey& key, const CostModel& cost) {
  std::string extra = "\"made_for\":" + key.json() + ",\"written_at\":";
  append_json_string(extra, utc_now_ms());
  return write_whole(path, cost.to_json(extra));
}

std::string step_cost_cache_path(const CostKey& key, const std::string& dir) {
  std::string path = cost_cache_path(key, dir);
  return path.substr(0, path.size() - 5) + "-steps.json";
}

Expected<std::optional<StepCost>> read_cached_step_cost(const std::string& path,
                                                        const CostKey& key) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<StepCost>();
  const auto bytes = std::filesystem::file_size(path, ec);
  if (ec || bytes > CostModel::kMaxFileBytes) {
    return invalid_argument(path + " is not a step cost file (" +
                            (ec ? ec.message() : std::to_string(bytes) + " bytes") + ")");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (Status s = check_made_for(text.str(), key, path); !s) return s.error();
  auto cost = parse_step_cost_json(text.str());
  if (!cost) return invalid_argument(path + ": " + cost.error().message);
  return std::optional<StepCost>(*cost);
}

Status write_cached_step_cost(const std::string& path, const CostKey& key, const StepCost& cost) {
  const std::string body = step_cost_json(cost, key.model, key.device);
  std::string head = "{\"made_for\":" + key.json() + ",\"written_at\":";
  append_json_string(head, utc_now_ms());
  // step_cost_json() writes an object: its members follow these.
  return write_whole(path, head + "," + body.substr(body.find('{') + 1));
}

namespace {

// Each part of the preprocess cost `seen` measured: its median per request
// before, as seen and after (quantiles p0..p100: the middle one).
std::vector<PreprocessMove> preprocess_moves(const PreprocessCost& before,
                                             const PreprocessCost& seen,
                                             const PreprocessCost& after) {
  std::vector<PreprocessMove> out;
  auto median = [](const std::vector<double>& q) { return q.empty() ? 0.0 : q[q.size() / 2]; };
  if (!seen.lane_us.empty() && !before.empty()) {
    out.push_back({0, seen.lane_requests, median(before.lane_us), median(seen.lane_us),
                   median(after.lane_us)});
  }
  for (const PreprocessCost::Pool& p : seen.pool) {
    if (before.empty()) break;
    const auto exact = [&](const PreprocessCost& c) {
      for (const PreprocessCost::Pool& q : c.pool) {
        if (q.busy == p.busy) return median(q.us);
      }
      return 0.0;
    };
    out.push_back({p.busy, p.requests, exact(before), median(p.us), exact(after)});
  }
  return out;
}

}  // namespace

Expected<std::optional<CostRefinement>> refine_cached_cost(const std::string& path,
                                                           const CostKey& key,
                                                           const CostModel& observed,
                                                           uint32_t lanes,
                                                           const CompetingLoad* others) {
  auto kept = read_cached_cost(path, key);
  if (!kept) return kept.error();
  if (!*kept) return std::optional<CostRefinement>();
  const CostModel& was = **kept;
  // Its lanes prepared their requests: nothing of t(b) to learn (calibrated()).
  if (observed.lanes_prepared() && !was.preprocess().lane_us.empty()) {
    return std::optional<CostRefinement>();
  }
  CostRefinement r;
  r.lanes = std::max<uint32_t>(lanes, 1);
  const std::string when = utc_now_ms();
  const RunVerdict verdict = judge_run(was, observed, r.lanes, others, busy_cores());
  CostEvidence evidence = evidence_of(observed, was, r.lanes, when);
  r.level = verdict.level;
  r.held = verdict.held;
  if (!verdict.busy.empty()) {
    r.busy = evidence.busy = verdict.busy;
    for (const CostPoint& p : observed.points()) r.batches += p.batches;
    if (Status s = write_cached_cost(path, key, was.with_evidence(std::move(evidence))); !s) {
      return s.error();
    }
    return std::optional<CostRefinement>(std::move(r));
  }
  // A move held short: the run's t(b) scaled, its preprocess as it was.
  CostModel seen = observed;
  if (verdict.scale != 1) {
    auto scaled = observed.scaled(verdict.scale).with_preprocess(observed.preprocess());
    if (!scaled) return scaled.error();
    seen = std::move(*scaled);
  }
  const CostModel refined = was.calibrated(seen, r.lanes, when).with_evidence(std::move(evidence));
  for (const CostPoint& p : observed.points()) {
    r.moves.push_back({p.batch, p.batches, was.cost_us(p.batch, r.lanes), p.median_us,
                       refined.cost_us(p.batch, r.lanes)});
    r.batches += p.batches;
  }
  r.preprocess = preprocess_moves(was.preprocess(), observed.preprocess(), refined.preprocess());
  if (Status s = write_cached_cost(path, key, refined); !s) return s.error();
  return std::optional<CostRefinement>(std::move(r));
}

Expected<std::optional<CostRefinement>> refine_cached_preprocess(const std::string& path,
                                                                 const CostKey& key,
                                                                 const PreprocessCost& seen) {
  auto kept = read_cached_cost(path, key);
  if (!kept) return kept.error();
  if (!*kept || seen.empty() || (**kept).preprocess().empty()) {
    return std::optional<CostRefinement>();
  }
  const CostModel& was = **kept;
  auto refined = was.with_preprocess(was.preprocess().refined(seen));
  if (!refined) return refined.error();
  CostRefinement r;
  r.preprocess = preprocess_moves(was.preprocess(), seen, refined->preprocess());
  if (Status s = write_cached_cost(path, key, *refined); !s) return s.error();
  return std::optional<CostRefinement>(std::move(r));
}

bool calibrated_for(const CostModel& cost, uint32_t lanes) {
  return cost.live_batches(std::max<uint32_t>(lanes, 1)) > 0;
}

std::string utc_now_ms() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

}  // namespace batchscope
