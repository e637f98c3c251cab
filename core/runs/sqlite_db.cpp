// SPDX-License-Identifier: GPL-3.0-or-later
#include "runs/sqlite_db.h"

namespace batchscope::sqlite {

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

Status Db::open(const std::string& path, bool create, bool read_only) {
  path_ = path;
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    Error e = error("cannot open");
    sqlite3_close_v2(db_);
    db_ = nullptr;
    return e;
  }
  sqlite3_extended_result_codes(db_, 1);
  return {};
}

bool Db::read_only() const { return db_ && sqlite3_db_readonly(db_, "main") == 1; }

Status Db::exec(std::string_view sql) {
  const std::string text(sql);
  char* msg = nullptr;
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    sqlite3_free(msg);
    return error("cannot run \"" + text.substr(0, 60) + "\"");
  }
  return {};
}

Expected<int64_t> Db::query_int(std::string_view sql) {
  Stmt st(*this, sql);
  if (!st.ok()) return error("cannot read");
  if (st.step() != SQLITE_ROW) return error("cannot read");
  return st.int_at(0);
}

Error Db::error(std::string_view what) const {
  const char* msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
  return Error{ErrorCode::kInternal, std::string(what) + " " + path_ + ": " + msg +
                                         " (sqlite code " + std::to_string(last_code()) + ")"};
}

Stmt::Stmt(Db& db, std::string_view sql) : db_(db) {
  if (sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()),
                         SQLITE_PREPARE_PERSISTENT, &st_, nullptr) != SQLITE_OK) {
    st_ = nullptr;
  }
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(st_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(st_, i);
  return *this;
}

Stmt& Stmt::bind_blob(int i, const void* data, size_t bytes) {
  sqlite3_bind_blob64(st_, i, data, bytes, SQLITE_TRANSIENT);
  return *this;
}

std::string Stmt::blob_at(int col) const {
  const void* p = sqlite3_column_blob(st_, col);
  const int n = sqlite3_column_bytes(st_, col);
  return p && n > 0 ? std::string(static_cast<const char*>(p), static_cast<size_t>(n))
                    : std::string();
}

int Stmt::step() { return st_ ? sqlite3_step(st_) : SQLITE_MISUSE; }

Status Stmt::run(std::string_view what) {
  const int rc = step();
  Status s;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) s = db_.error(what);
  reset();
  return s;
}

void Stmt::reset() {
  if (!st_) return;
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}

std::string Stmt::text_at(int col) const {
  const auto* p = sqlite3_column_text(st_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(st_, col)))
           : std::string();
}

}  // namespace batchscope::sqlite
