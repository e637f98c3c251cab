// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the soak's clients saw, counted exactly: per request kind, the
// statuses it may be answered with; per status, how many answers were read;
// requests that got no answer; requests sent by clients that left without
// reading (whose answers the server may write or drop); and every answer
// that was not what its kind allows, kept as a problem.
// Thread-safety: thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace batchscope::soak {

enum class Kind {
  kValid,         // /infer of one row from the pool
  kRows,          // KServe v2 of 1..3 rows from the pool
  kNegative,      // a negative input: the model throws for its batch
  kMalformed,     // not JSON
  kShortData,     // too few values
  kWrongType,     // v2 with an INT64 input
  kUnknownModel,  // v2 to a model the server does not have
  kWrongMethod,   // GET /infer
  kWrongToken,    // a bearer token that is not the server's (when it has one)
  kRetune,        // PUT /v1/config, valid
  kBadRetune,     // PUT /v1/config, out of range
  kOversize,      // a body over the limit, written in full
  kHugeHeader,    // a 1 MiB header line
  kSlowHead,      // headers trickled a byte at a time
  kSlowBody,      // a body trickled a byte at a time
  kScrape,        // GET /metrics
  kStalledRead,   // GET /metrics pipelined by a client that pauses before reading
  kStopping,      // valid traffic while the server stops
};

const char* kind_name(Kind k);
// Whether `status` is an answer `k` may get (a valid request may meet a full
// queue, a timeout or a batch spoiled by a negative input).
bool allowed(Kind k, int status);

// The sum the issue asks for: ok, rejected, timed out, invalid, errors.
const char* bucket_of(int status);

class Tally {
 public:
  void sent(Kind k, uint64_t n = 1);
  // A waiting client read its answer; `why` is shown for a problem.
  void answered(Kind k, int status, const std::string& why = {});
  // A waiting client's request got no answer (the connection failed). A
  // problem, except for kStopping.
  void lost(Kind k, const std::string& why);
  // Requests sent complete by a client that left without reading.
  void abandoned(uint64_t n);
  // Requests sent complete by a client that then reset the connection: the
  // server may have read them or not.
  void reset_sent(uint64_t n);
  void problem(const std::string& what);

  std::map<int, uint64_t> by_status() const;
  std::map<Kind, uint64_t> sent_by_kind() const;
  uint64_t sent_total() const;
  uint64_t answered_total() const;
  uint64_t lost_total() const;
  uint64_t abandoned_total() const;
  uint64_t reset_total() const;
  uint64_t problem_count() const;
  std::vector<std::string> problems() const;  // the first ones, for the report
  void reset_status_counts();                 // for a new phase: problems too

 private:
  mutable std::mutex mu_;
  std::map<Kind, uint64_t> sent_;
  std::map<int, uint64_t> by_status_;
  uint64_t answered_ = 0;
  uint64_t lost_ = 0;
  uint64_t abandoned_ = 0;
  uint64_t reset_ = 0;
  uint64_t problem_count_ = 0;
  std::vector<std::string> problems_;
};

}  // namespace batchscope::soak
