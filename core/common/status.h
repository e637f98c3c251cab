// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Errors that cross module boundaries are values, not exceptions.
// Thread-safety: plain values; safe to copy between threads.

#include <string>
#include <utility>
#include <variant>

namespace batchscope {

enum class ErrorCode {
  kInvalidArgument,  // bad option, bad input shape/dtype
  kQueueFull,        // admission queue at capacity; retry later
  kTimedOut,         // deadline passed while queued; never reached the model
  kCancelled,        // cancelled by id (for example a client that went away)
  kModelError,       // the runner failed or threw for this request's batch
  kShuttingDown,     // the engine is stopping and will not run this request
  kUnavailable,      // the model's process died with this request's batch (it is restarted)
  kModelTimedOut,    // the model ran past its time limit on this request's batch
  kInternal,         // a broken invariant; a bug
};

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Either a value or an Error. A small stand-in for C++23 std::expected.
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success, or an Error.
class Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }
  const std::string& message() const { return error_.message; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error invalid_argument(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

}  // namespace batchscope
