// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A thin owner of one SQLite connection and its prepared statements, for the
// run history: errors come back as Status with SQLite's own words and the
// file's path, never as exceptions.
// Thread-safety: one thread at a time per Db (SQLite's multi-thread mode).

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace batchscope::sqlite {

class Stmt;

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens `path` (creating it when `create`), read-only when `read_only`.
  Status open(const std::string& path, bool create, bool read_only);
  bool is_open() const { return db_ != nullptr; }
  bool read_only() const;
  // Runs statements without results.
  Status exec(std::string_view sql);
  Expected<int64_t> query_int(std::string_view sql);
  // The last error as "PATH: MESSAGE (sqlite code N)" with `what` before it.
  Error error(std::string_view what) const;
  int last_code() const { return db_ ? sqlite3_extended_errcode(db_) : SQLITE_CANTOPEN; }
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  int changes() const { return sqlite3_changes(db_); }
  sqlite3* handle() { return db_; }
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// A prepared statement, reset and rebound for each use.
class Stmt {
 public:
  Stmt(Db& db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return st_ != nullptr; }
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_null(int i);
  Stmt& bind_blob(int i, const void* data, size_t bytes);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  // Steps to the end; ok when it ran to SQLITE_DONE.
  Status run(std::string_view what);
  void reset();

  int64_t int_at(int col) const { return sqlite3_column_int64(st_, col); }
  double double_at(int col) const { return sqlite3_column_double(st_, col); }
  bool null_at(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  std::string text_at(int col) const;
  std::string blob_at(int col) const;

 private:
  Db& db_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace batchscope::sqlite
