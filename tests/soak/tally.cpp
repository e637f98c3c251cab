// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/soak/tally.h"

namespace batchscope::soak {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kValid: return "valid /infer";
    case Kind::kRows: return "valid v2 rows";
    case Kind::kNegative: return "negative input";
    case Kind::kMalformed: return "malformed JSON";
    case Kind::kShortData: return "short data";
    case Kind::kWrongType: return "wrong datatype";
    case Kind::kUnknownModel: return "unknown model";
    case Kind::kWrongMethod: return "wrong method";
    case Kind::kWrongToken: return "wrong token";
    case Kind::kRetune: return "retune";
    case Kind::kBadRetune: return "invalid retune";
    case Kind::kOversize: return "oversized body";
    case Kind::kHugeHeader: return "huge header";
    case Kind::kSlowHead: return "slow head";
    case Kind::kSlowBody: return "slow body";
    case Kind::kScrape: return "metrics scrape";
    case Kind::kStalledRead: return "stalled reader";
    case Kind::kStopping: return "while stopping";
  }
  return "?";
}

bool allowed(Kind k, int status) {
  switch (k) {
    case Kind::kValid:
    case Kind::kRows: return status == 200 || status == 429 || status == 504 || status == 500;
    case Kind::kNegative: return status == 500 || status == 429 || status == 504;
    case Kind::kMalformed: return status == 400;
    case Kind::kShortData:
    case Kind::kWrongType: return status == 422;
    case Kind::kUnknownModel: return status == 404;
    case Kind::kWrongMethod: return status == 405;
    case Kind::kWrongToken: return status == 401;
    case Kind::kRetune:
    case Kind::kScrape:
    case Kind::kStalledRead: return status == 200;
    case Kind::kBadRetune: return status == 400;
    case Kind::kOversize: return status == 413;
    case Kind::kHugeHeader: return status == 431;
    case Kind::kSlowHead:
    case Kind::kSlowBody: return status == 408;
    case Kind::kStopping: return status == 200 || status == 503 || status == 429 || status == 504;
  }
  return false;
}

const char* bucket_of(int status) {
  switch (status) {
    case 200: return "ok";
    case 429: return "rejected";
    case 504: return "timed out";
  }
  if (status >= 400 && status < 500) return "invalid";
  return "errors";
}

void Tally::sent(Kind k, uint64_t n) {
  std::lock_guard g(mu_);
  sent_[k] += n;
}

void Tally::answered(Kind k, int status, const std::string& why) {
  std::lock_guard g(mu_);
  ++by_status_[status];
  ++answered_;
  if (!allowed(k, status)) {
    ++problem_count_;
    if (problems_.size() < 20) {
      problems_.push_back(std::string(kind_name(k)) + " answered " + std::to_string(status) +
                          (why.empty() ? "" : ": " + why.substr(0, 200)));
    }
  }
}

void Tally::lost(Kind k, const std::string& why) {
  std::lock_guard g(mu_);
  ++lost_;
  // While the server stops, a request it never read meets a closed or
  // refused connection; the accounting line shows it read none of them.
  if (k == Kind::kStopping) return;
  ++problem_count_;
  if (problems_.size() < 20) {
    problems_.push_back(std::string(kind_name(k)) + " got no answer: " + why.substr(0, 200));
  }
}

void Tally::abandoned(uint64_t n) {
  std::lock_guard g(mu_);
  abandoned_ += n;
}

void Tally::reset_sent(uint64_t n) {
  std::lock_guard g(mu_);
  reset_ += n;
}

uint64_t Tally::reset_total() const {
  std::lock_guard g(mu_);
  return reset_;
}

void Tally::problem(const std::string& what) {
  std::lock_guard g(mu_);
  ++problem_count_;
  if (problems_.size() < 20) problems_.push_back(what);
}

std::map<int, uint64_t> Tally::by_status() const {
  std::lock_guard g(mu_);
  return by_status_;
}
std::map<Kind, uint64_t> Tally::sent_by_kind() const {
  std::lock_guard g(mu_);
  return sent_;
}
uint64_t Tally::sent_total() const {
  std::lock_guard g(mu_);
  uint64_t n = 0;
  for (const auto& [k, v] : sent_) n += v;
  return n;
}
uint64_t Tally::answered_total() const {
  std::lock_guard g(mu_);
  return answered_;
}
uint64_t Tally::lost_total() const {
  std::lock_guard g(mu_);
  return lost_;
}
uint64_t Tally::abandoned_total() const {
  std::lock_guard g(mu_);
  return abandoned_;
}
uint64_t Tally::problem_count() const {
  std::lock_guard g(mu_);
  return problem_count_;
}
std::vector<std::string> Tally::problems() const {
  std::lock_guard g(mu_);
  return problems_;
}
void Tally::reset_status_counts() {
  std::lock_guard g(mu_);
  by_status_.clear();
  sent_.clear();
  answered_ = lost_ = abandoned_ = reset_ = problem_count_ = 0;
  problems_.clear();
}

}  // namespace batchscope::soak
