// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/history.h"

#include "runs/sqlite_db.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace batchscope {
namespace {

// Nanoseconds since the run's start; NULL for a stage never reached (the
// zero TimePoint, or kNever).
void bind_time(sqlite::Stmt& st, int i, TimePoint t, TimePoint start) {
  if (t == TimePoint{} || t == kNever)
    st.bind_null(i);
  else
    st.bind(i, static_cast<int64_t>((t - start).count()));
}

// A loaded run's time zero. Not the zero TimePoint, which means "never".
constexpr TimePoint kLoadedStart = TimePoint{} + std::chrono::hours(1);

// A time read back: `start` plus the nanoseconds kept, or `missing` for NULL.
TimePoint time_at(const sqlite::Stmt& st, int col, TimePoint start = kLoadedStart,
                  TimePoint missing = TimePoint{}) {
  return st.null_at(col) ? missing : start + Duration(st.int_at(col));
}

Error not_found(int64_t id, const std::string& path) {
  return invalid_argument("no run " + std::to_string(id) + " in history " + path +
                          " (batchscope runs list shows the ids)");
}

constexpr const char* kRunColumns =
    "id, kind, started_at, finished_at, label, model, traffic, target, duration_s, seed, "
    "options, context, summary, requests_seen, requests_kept, parent_id";

HistoryRun run_at(const sqlite::Stmt& st) {
  HistoryRun r;
  r.id = st.int_at(0);
  r.kind = st.text_at(1);
  r.started_at = st.text_at(2);
  r.finished_at = st.text_at(3);
  r.label = st.text_at(4);
  r.model = st.text_at(5);
  r.config.pattern = st.text_at(6);
  r.config.target = st.text_at(7);
  r.config.duration_s = st.double_at(8);
  r.config.seed = static_cast<uint64_t>(st.int_at(9));
  r.config.options = options_from_history_json(st.text_at(10));
  r.config.model = r.model;
  r.context = st.text_at(11);
  r.summary = st.text_at(12);
  r.requests_seen = static_cast<uint64_t>(st.int_at(13));
  r.requests_kept = static_cast<uint64_t>(st.int_at(14));
  r.parent_id = st.null_at(15) ? 0 : st.int_at(15);
  return r;
}

}  // namespace

std::string default_history_path() {
  if (const char* env = std::getenv("BATCHSCOPE_HISTORY"); env && *env) return env;
  std::string base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::string(home) + "/.local/share";
  } else {
    base = ".";
  }
  return base + "/batchscope/history.sqlite";
}

std::string utc_text(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t);
  const std::time_t s =
      std::chrono::system_clock::to_time_t(std::chrono::floor<std::chrono::seconds>(ms));
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ",
                static_cast<int>((ms.time_since_epoch() % std::chrono::seconds(1)).count()));
  return buf;
}

std::string utc_now() { return utc_text(std::chrono::system_clock::now()); }

std::chrono::system_clock::time_point wall_time_of(TimePoint t) {
  const auto ago = TimePoint(std::chrono::steady_clock::now()) - t;
  return std::chrono::system_clock::now() -
         std::chrono::duration_cast<std::chrono::system_clock::duration>(ago);
}

namespace {

// "2026-11-28T19:40:00Z" or "2026-11-28T19:40:00.123Z" as seconds since
// the epoch.
std::optional<double> epoch_seconds(const std::string& text) {
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return std::nullopt;
  double frac = 0;
  if (*rest == '.') {
    char* end = nullptr;
    frac = std::strtod(rest, &end);
    rest = end;
  }
  if (std::string_view(rest) != "Z") return std::nullopt;
  return static_cast<double>(timegm(&tm)) + frac;
}

}  // namespace

std::optional<double> seconds_between(const std::string& from, const std::string& to) {
  const auto a = epoch_seconds(from), b = epoch_seconds(to);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

Expected<std::string> summary_of(History& h, const HistoryRun& run) {
  if (run.finished() || run.kind == "tune" || run.generative()) return run.summary;
  auto data = h.load(run.id);
  if (!data) return data.error();
  TimePoint end = data->start;
  for (const RunRequest& q : data->requests) end = std::max(end, q.done);
  data->config.duration_s = std::chrono::duration<double>(end - data->start).count();
  const double w = std::clamp(data->config.duration_s / 40.0, 0.1, 10.0);
  return run_summary_json(
      *data,
      summarize_run(*data, std::chrono::duration_cast<Duration>(std::chrono::duration<double>(w))));
}

Options options_from_history_json(const std::string& json, Options base) {
  const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return base;
  for (const auto& [key, value] : doc.items()) {
    if (value.is_number()) {
      if (const NumericOption* o = find_numeric_option(key); o && !o->alias) {
        (void)set_numeric_option(base, key, value.get<double>(), value.dump());
      }
    } else if (value.is_string() && key == "strategy") {
      if (auto s = parse_strategy(value.get<std::string>())) base.strategy = *s;
    } else if (value.is_string() && key == "scheduling") {
      if (auto s = parse_scheduling(value.get<std::string>())) base.scheduling = *s;
    }
  }
  return base;
}

History::History() : db_owner_(std::make_unique<sqlite::Db>()), db_(*db_owner_) {}
History::~History() = default;
const std::string& History::path() const { return db_.path(); }
bool History::busy() const { return (db_.last_code() & 0xff) == SQLITE_BUSY; }

Expected<std::unique_ptr<History>> History::open(const std::string& path, OpenOptions o) {
  std::unique_ptr<History> h(new History());
  if (!o.read_only) {
    std::error_code ec;
    const auto dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  }
  if (Status s = h->db_.open(path, /*create=*/!o.read_only, o.read_only); !s) return s.error();
  sqlite3_busy_timeout(h->db_.handle(), o.busy_timeout_ms);
  if (!o.read_only && h->db_.read_only()) {
    return Error{ErrorCode::kInvalidArgument,
                 "history " + path +
                     " is read-only (check its permissions, or give another "
                     "--history file)"};
  }
  // Reading the schema version is the first touch of the file: a file that
  // is not a database fails here.
  auto v = h->db_.query_int("PRAGMA user_version");
  if (!v) {
    const int code = h->db_.last_code() & 0xff;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
      return Error{ErrorCode::kInvalidArgument,
                   "history " + path +
                       " is not a Batchscope history (not an SQLite database, "
                       "or a damaged one): move it aside or give another "
                       "--history file"};
    }
    return v.error();
  }
  if (!o.read_only) {
    // WAL: readers never wait for the writer, and a commit survives the
    // process being killed. NORMAL: commits are not synced to disk one by
    // one (a power cut may lose the last ones; a crash loses none).
    auto mode = h->db_.query_int("PRAGMA journal_mode=WAL");
    (void)mode;
    if (Status s = h->db_.exec("PRAGMA synchronous=NORMAL"); !s) return s.error();
  }
  if (Status s = h->db_.exec("PRAGMA foreign_keys=ON"); !s) return s.error();
  if (Status s = h->migrate(); !s) return s.error();
  if (Status s = h->prepare(); !s) return s.error();
  return h;
}

Status History::prepare() {
  if (db_.read_only()) return {};
  insert_request_ = std::make_unique<sqlite::Stmt>(
      db_,
      "INSERT INTO requests(run_id, idx, intended_ns, sent_ns, done_ns, outcome, http_status, "
      "batch_id, batch_size) VALUES(?,?,?,?,?,?,?,?,?)");
  insert_batch_ = std::make_unique<sqlite::Stmt>(
      db_,
      "INSERT INTO batches(run_id, id, size, reason, lane, failed, depth_after, oldest_ns, "
      "batched_ns, run_start_ns, run_end_ns, longest, length_sum) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  insert_depth_ = std::make_unique<sqlite::Stmt>(
      db_, "INSERT INTO depth(run_id, t_ns, depth, peak) VALUES(?,?,?,?)");
  if (!insert_request_->ok() || !insert_batch_->ok() || !insert_depth_->ok())
    return db_.error("cannot prepare the history's statements in");
  return {};
}

Status History::begin() { return db_.exec("BEGIN IMMEDIATE"); }
Status History::commit() { return db_.exec("COMMIT"); }
void History::rollback() {
  if (sqlite3_get_autocommit(db_.handle()) == 0) (void)db_.exec("ROLLBACK");
}

Expected<int64_t> History::begin_run(const HistoryRun& r) {
  sqlite::Stmt st(db_,
                  "INSERT INTO runs(kind, started_at, finished_at, label, model, traffic, target, "
                  "duration_s, seed, options, context, summary, requests_seen, requests_kept, "
                  "parent_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, r.kind).bind(2, r.started_at.empty() ? utc_now() : r.started_at);
  if (r.finished_at.empty())
    st.bind_null(3);
  else
    st.bind(3, r.finished_at);
  st.bind(4, r.label).bind(5, r.model).bind(6, r.config.pattern).bind(7, r.config.target);
  st.bind(8, r.config.duration_s).bind(9, static_cast<int64_t>(r.config.seed));
  st.bind(10, options_to_json(r.config.options));
  st.bind(11, r.context.empty() ? std::string_view("{}") : std::string_view(r.context));
  st.bind(12, r.summary.empty() ? std::string_view("{}") : std::string_view(r.summary));
  st.bind(13, static_cast<int64_t>(r.requests_seen))
      .bind(14, static_cast<int64_t>(r.requests_kept));
  if (r.parent_id > 0)
    st.bind(15, r.parent_id);
  else
    st.bind_null(15);
  if (Status s = st.run("cannot add a run to"); !s) return s.error();
  return db_.last_insert_id();
}

Status History::append(int64_t id, TimePoint start, std::span<const RunRequest> requests,
                       std::span<const BatchRecord> batches, std::span<const DepthSample> depth) {
  for (const RunRequest& q : requests) {
    auto& st = *insert_request_;
    st.bind(1, id).bind(2, static_cast<int64_t>(q.index));
    bind_time(st, 3, q.intended, start);
    bind_time(st, 4, q.sent, start);
    bind_time(st, 5, q.done, start);
    st.bind(6, static_cast<int64_t>(q.outcome)).bind(7, static_cast<int64_t>(q.http_status));
    st.bind(8, static_cast<int64_t>(q.batch_id)).bind(9, static_cast<int64_t>(q.batch_size));
    if (Status s = st.run("cannot add requests to"); !s) return s;
  }
  for (const BatchRecord& b : batches) {
    auto& st = *insert_batch_;
    st.bind(1, id).bind(2, static_cast<int64_t>(b.id)).bind(3, static_cast<int64_t>(b.size));
    st.bind(4, static_cast<int64_t>(b.reason)).bind(5, static_cast<int64_t>(b.lane));
    st.bind(6, static_cast<int64_t>(b.failed)).bind(7, static_cast<int64_t>(b.queue_depth_after));
    bind_time(st, 8, b.oldest_arrival, start);
    bind_time(st, 9, b.batched, start);
    bind_time(st, 10, b.run_start, start);
    bind_time(st, 11, b.run_end, start);
    st.bind(12, static_cast<int64_t>(b.longest)).bind(13, static_cast<int64_t>(b.length_sum));
    if (Status s = st.run("cannot add batches to"); !s) return s;
  }
  for (const DepthSample& d : depth) {
    auto& st = *insert_depth_;
    st.bind(1, id);
    bind_time(st, 2, d.time, start);
    st.bind(3, static_cast<int64_t>(d.depth)).bind(4, static_cast<int64_t>(d.peak));
    if (Status s = st.run("cannot add depth samples to"); !s) return s;
  }
  return {};
}

Status History::relabel(int64_t id, const std::string& label) {
  sqlite::Stmt st(db_, "UPDATE runs SET label = ? WHERE id = ?");
  st.bind(1, label).bind(2, id);
  return st.run("cannot relabel a run in");
}

Status History::append_generation(int64_t id, TimePoint start,
                                  std::span<const HistoryGenRequest> requests) {
  sqlite::Stmt st(db_,
                  "INSERT INTO gen_requests(run_id, idx, intended_ns, first_ns, last_ns, "
                  "finished_ns, prompt_tokens, max_tokens, output_tokens, done, ok, outcome, gaps) "
                  "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  int64_t idx = 0;
  std::vector<int64_t> gaps;
  for (const HistoryGenRequest& r : requests) {
    st.bind(1, id).bind(2, idx++).bind(3, static_cast<int64_t>(r.intended.count()));
    bind_time(st, 4, r.first, start);
    bind_time(st, 5, r.last, start);
    bind_time(st, 6, r.finished, start);
    st.bind(7, static_cast<int64_t>(r.prompt_tokens)).bind(8, static_cast<int64_t>(r.max_tokens));
    st.bind(9, static_cast<int64_t>(r.output_tokens)).bind(10, static_cast<int64_t>(r.done));
    st.bind(11, static_cast<int64_t>(r.ok)).bind(12, r.outcome);
    gaps.clear();
    for (Duration g : r.gaps) gaps.push_back(g.count());
    st.bind_blob(13, gaps.data(), gaps.size() * sizeof(int64_t));
    if (Status s = st.run("cannot add generation requests to"); !s) return s;
  }
  return {};
}

Expected<std::vector<HistoryGenRequest>> History::load_generation(int64_t id, TimePoint start) {
  sqlite::Stmt st(db_,
                  "SELECT intended_ns, first_ns, last_ns, finished_ns, prompt_tokens, max_tokens, "
                  "output_tokens, done, ok, outcome, gaps FROM gen_requests WHERE run_id = ? "
                  "ORDER BY rowid");
  if (!st.ok()) return db_.error("cannot read");
  st.bind(1, id);
  auto when = [&](int col) { return time_at(st, col, start, kNever); };
  std::vector<HistoryGenRequest> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    HistoryGenRequest r;
    r.intended = Duration(st.int_at(0));
    r.first = when(1);
    r.last = when(2);
    r.finished = when(3);
    r.prompt_tokens = static_cast<uint32_t>(st.int_at(4));
    r.max_tokens = static_cast<uint32_t>(st.int_at(5));
    r.output_tokens = static_cast<uint32_t>(st.int_at(6));
    r.done = st.int_at(7) != 0;
    r.ok = st.int_at(8) != 0;
    r.outcome = st.text_at(9);
    const std::string blob = st.blob_at(10);
    r.gaps.resize(blob.size() / sizeof(int64_t));
    for (size_t i = 0; i < r.gaps.size(); ++i) {
      int64_t ns;
      std::memcpy(&ns, blob.data() + i * sizeof(int64_t), sizeof ns);
      r.gaps[i] = Duration(ns);
    }
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return db_.error("cannot read generation requests from");
  return out;
}

Status History::append_steps(int64_t id, TimePoint start, std::span<const StepRecord> steps) {
  sqlite::Stmt st(db_,
                  "INSERT INTO gen_steps(run_id, step, start_ns, end_ns, decodes, prefill_tokens, "
                  "prefills, output_tokens, running, waiting, blocks_used, blocks_total, "
                  "preempted, finished, seqs, context_tokens, lane) "
                  "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  std::vector<int64_t> seqs;
  for (const StepRecord& x : steps) {
    st.bind(1, id).bind(2, static_cast<int64_t>(x.step));
    bind_time(st, 3, x.start, start);
    bind_time(st, 4, x.end, start);
    const uint32_t counts[] = {x.decodes,   x.prefill_tokens, x.prefills,    x.output_tokens,
                               x.running,   x.waiting,        x.blocks_used, x.blocks_total,
                               x.preempted, x.finished};
    for (int i = 0; i < 10; ++i) st.bind(5 + i, static_cast<int64_t>(counts[i]));
    seqs.clear();
    for (const auto& [seq, prefill] : x.seqs) {
      seqs.push_back(static_cast<int64_t>(seq));
      seqs.push_back(prefill);
    }
    st.bind_blob(15, seqs.data(), seqs.size() * sizeof(int64_t));
    st.bind(16, static_cast<int64_t>(x.context_tokens));
    st.bind(17, static_cast<int64_t>(x.lane));
    if (Status s = st.run("cannot add steps to"); !s) return s;
  }
  return {};
}

Expected<std::vector<StepRecord>> History::load_steps(int64_t id, TimePoint start) {
  sqlite::Stmt st(db_,
                  "SELECT step, start_ns, end_ns, decodes, prefill_tokens, prefills, "
                  "output_tokens, running, waiting, blocks_used, blocks_total, preempted, "
                  "finished, seqs, context_tokens, lane FROM gen_steps WHERE run_id = ? "
                  "ORDER BY rowid");
  if (!st.ok()) return db_.error("cannot read");
  st.bind(1, id);
  auto when = [&](int col) { return time_at(st, col, start); };
  std::vector<StepRecord> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    StepRecord x;
    x.step = static_cast<uint64_t>(st.int_at(0));
    x.start = when(1);
    x.end = when(2);
    uint32_t* counts[] = {&x.decodes,   &x.prefill_tokens, &x.prefills,    &x.output_tokens,
                          &x.running,   &x.waiting,        &x.blocks_used, &x.blocks_total,
                          &x.preempted, &x.finished};
    for (int i = 0; i < 10; ++i) *counts[i] = static_cast<uint32_t>(st.int_at(3 + i));
    const std::string blob = st.blob_at(13);
    const size_t pairs = blob.size() / (2 * sizeof(int64_t));
    for (size_t i = 0; i < pairs; ++i) {
      int64_t v[2];
      std::memcpy(v, blob.data() + i * sizeof v, sizeof v);
      x.seqs.emplace_back(static_cast<uint64_t>(v[0]), static_cast<uint32_t>(v[1]));
    }
    x.context_tokens = static_cast<uint32_t>(st.int_at(14));
    x.lane = static_cast<uint32_t>(st.int_at(15));
    out.push_back(std::move(x));
  }
  if (rc != SQLITE_DONE) return db_.error("cannot read steps from");
  return out;
}

Status History::append_bodies(int64_t id, std::span<const HistoryBody> bodies) {
  sqlite::Stmt st(db_, "INSERT INTO bodies(run_id, at_ns, route, body) VALUES(?,?,?,?)");
  for (const HistoryBody& b : bodies) {
    st.bind(1, id).bind(2, static_cast<int64_t>(b.at.count())).bind(3, b.route);
    st.bind_blob(4, b.body.data(), b.body.size());
    if (Status s = st.run("cannot add request bodies to"); !s) return s;
  }
  return {};
}

Expected<std::vector<HistoryBody>> History::load_bodies(int64_t id) {
  sqlite::Stmt st(db_, "SELECT at_ns, route, body FROM bodies WHERE run_id = ? ORDER BY rowid");
  if (!st.ok()) return db_.error("cannot read");
  st.bind(1, id);
  std::vector<HistoryBody> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) {
    out.push_back(HistoryBody{Duration(st.int_at(0)), st.text_at(1), st.blob_at(2)});
  }
  if (rc != SQLITE_DONE) return db_.error("cannot read request bodies from");
  return out;
}

Status History::set_counts(int64_t id, uint64_t seen, uint64_t kept) {
  sqlite::Stmt st(db_, "UPDATE runs SET requests_seen = ?, requests_kept = ? WHERE id = ?");
  st.bind(1, static_cast<int64_t>(seen)).bind(2, static_cast<int64_t>(kept)).bind(3, id);
  return st.run("cannot update a run in");
}

Status History::finish_run(int64_t id, const std::string& summary, uint64_t seen, uint64_t kept,
                           double duration_s, const std::string& finished_at) {
  sqlite::Stmt st(db_,
                  "UPDATE runs SET finished_at = ?, summary = ?, requests_seen = ?, "
                  "requests_kept = ?, duration_s = CASE WHEN ?5 >= 0 THEN ?5 ELSE duration_s END "
                  "WHERE id = ?6");
  st.bind(1, finished_at.empty() ? utc_now() : finished_at)
      .bind(2, summary.empty() ? std::string_view("{}") : summary);
  st.bind(3, static_cast<int64_t>(seen)).bind(4, static_cast<int64_t>(kept));
  st.bind(5, duration_s).bind(6, id);
  return st.run("cannot finish a run in");
}

Expected<std::vector<HistoryRun>> History::list(const HistoryFilter& f) {
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE 1";
  if (!f.model.empty()) sql += " AND model = ?1";
  if (!f.kind.empty()) sql += " AND kind = ?2";
  if (!f.since.empty()) sql += " AND started_at >= ?3";
  if (!f.text.empty()) sql += " AND (instr(label, ?4) > 0 OR instr(model, ?4) > 0)";
  if (f.parent > 0) sql += " AND parent_id = ?5";
  sql += " ORDER BY started_at DESC, id DESC";
  sqlite::Stmt st(db_, sql);
  if (!st.ok()) return db_.error("cannot read");
  if (!f.model.empty()) st.bind(1, f.model);
  if (!f.kind.empty()) st.bind(2, f.kind);
  if (!f.since.empty()) st.bind(3, f.since);
  if (!f.text.empty()) st.bind(4, f.text);
  if (f.parent > 0) st.bind(5, f.parent);
  std::vector<HistoryRun> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back(run_at(st));
  if (rc != SQLITE_DONE) return db_.error("cannot read");
  return out;
}

Expected<std::vector<std::string>> History::models() {
  sqlite::Stmt st(db_, "SELECT DISTINCT model FROM runs WHERE model != '' ORDER BY model");
  if (!st.ok()) return db_.error("cannot read");
  std::vector<std::string> out;
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back(st.text_at(0));
  if (rc != SQLITE_DONE) return db_.error("cannot read");
  return out;
}

Expected<HistoryRun> History::get(int64_t id) {
  sqlite::Stmt st(db_, std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?");
  if (!st.ok()) return db_.error("cannot read");
  st.bind(1, id);
  const int rc = st.step();
  if (rc == SQLITE_ROW) return run_at(st);
  if (rc == SQLITE_DONE) return not_found(id, db_.path());
  return db_.error("cannot read");
}

Expected<RunData> History::load(int64_t id) {
  auto row = get(id);
  if (!row) return row.error();
  RunData run;
  run.config = row->config;
  run.start = kLoadedStart;
  {
    sqlite::Stmt st(db_,
                    "SELECT idx, intended_ns, sent_ns, done_ns, outcome, http_status, batch_id, "
                    "batch_size FROM requests WHERE run_id = ? ORDER BY intended_ns, rowid");
    st.bind(1, id);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      RunRequest q;
      // In intended order, indexed as a recorder indexes a finished run
      // (a recording is kept in the order its answers came).
      q.index = run.requests.size();
      q.intended = time_at(st, 1);
      q.sent = time_at(st, 2);
      q.done = time_at(st, 3);
      const int64_t o = st.int_at(4);
      q.outcome = o >= 0 && o < kOutcomeCount ? static_cast<Outcome>(o) : Outcome::kModelError;
      q.http_status = static_cast<int>(st.int_at(5));
      q.batch_id = static_cast<uint64_t>(st.int_at(6));
      q.batch_size = static_cast<uint32_t>(st.int_at(7));
      run.requests.push_back(q);
    }
    if (rc != SQLITE_DONE) return db_.error("cannot read requests from");
  }
  {
    sqlite::Stmt st(db_,
                    "SELECT id, size, reason, lane, failed, depth_after, oldest_ns, batched_ns, "
                    "run_start_ns, run_end_ns, longest, length_sum FROM batches WHERE run_id = ? "
                    "ORDER BY batched_ns, rowid");
    st.bind(1, id);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      BatchRecord b;
      b.id = static_cast<uint64_t>(st.int_at(0));
      b.size = static_cast<uint32_t>(st.int_at(1));
      const int64_t reason = st.int_at(2);
      b.reason = reason >= 0 && reason < kBatchReasonCount ? static_cast<BatchReason>(reason)
                                                           : BatchReason::kFull;
      b.lane = static_cast<uint16_t>(st.int_at(3));
      b.failed = st.int_at(4) != 0;
      b.queue_depth_after = static_cast<uint32_t>(st.int_at(5));
      b.oldest_arrival = time_at(st, 6);
      b.batched = time_at(st, 7);
      b.run_start = time_at(st, 8);
      b.run_end = time_at(st, 9);
      b.longest = static_cast<uint32_t>(std::clamp<int64_t>(st.int_at(10), 0, UINT32_MAX));
      b.length_sum = static_cast<uint64_t>(std::max<int64_t>(st.int_at(11), 0));
      run.batches.push_back(b);
    }
    if (rc != SQLITE_DONE) return db_.error("cannot read batches from");
  }
  {
    sqlite::Stmt st(db_,
                    "SELECT t_ns, depth, peak FROM depth WHERE run_id = ? ORDER BY t_ns, rowid");
    st.bind(1, id);
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      run.depth.push_back(DepthSample{time_at(st, 0), static_cast<uint32_t>(st.int_at(1)),
                                      static_cast<uint32_t>(st.int_at(2))});
    }
    if (rc != SQLITE_DONE) return db_.error("cannot read depth samples from");
  }
  return run;
}

Status History::remove_in_transaction(int64_t id) {
  sqlite::Stmt st(db_, "DELETE FROM runs WHERE id = ?");
  st.bind(1, id);
  return st.run("cannot remove a run from");
}

Status History::remove(int64_t id) {
  if (Status s = begin(); !s) return s;
  Status s = remove_in_transaction(id);
  const int removed = db_.changes();
  if (s) s = commit();
  if (!s) {
    rollback();
    return s;
  }
  if (removed == 0) return not_found(id, db_.path());
  return {};
}

}  // namespace batchscope
