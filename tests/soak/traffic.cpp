// SPDX-License-Identifier: GPL-3.0-or-later
#include "tests/soak/traffic.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <charconv>
#include <cmath>
#include <thread>

#include "tests/http/test_client.h"

namespace batchscope::soak {

namespace {

constexpr int kPool = 64;

std::string float_text(float v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

QJsonObject parse(std::string_view body) {
  return QJsonDocument::fromJson(QByteArray(body.data(), static_cast<qsizetype>(body.size())))
      .object();
}

std::vector<double> numbers(const QJsonValue& v) {
  std::vector<double> out;
  for (const QJsonValue& x : v.toArray()) out.push_back(x.toDouble());
  return out;
}

}  // namespace

std::string http_request(const std::string& auth, std::string_view method, std::string_view path,
                         std::string_view body) {
  return test::http_request(std::string(method), std::string(path), std::string(body),
                            auth.empty() ? "" : "Authorization: Bearer " + auth + "\r\n");
}

Traffic::Traffic(std::string host, uint16_t port, ModelShape model, std::string auth, Tally& tally,
                 uint64_t seed, int connections)
    : host_(std::move(host)),
      port_(port),
      model_(std::move(model)),
      auth_(std::move(auth)),
      tally_(tally),
      client_(std::make_unique<HttpLoadClient>(host_, port_, connections)),
      reference_(kPool) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(0.05f, 2.0f);
  for (int k = 0; k < kPool; ++k) {
    std::vector<float> row(static_cast<size_t>(model_.in));
    std::string json = "[";
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = value(rng);
      json += (i ? "," : "") + float_text(row[i]);
    }
    pool_.push_back(std::move(row));
    pool_json_.push_back(json + "]");
  }
}

Traffic::~Traffic() { client_->stop(); }

bool Traffic::start() { return client_->start().ok(); }

std::string Traffic::build(Kind kind, std::mt19937_64& rng, std::vector<int>& rows) const {
  std::uniform_int_distribution<int> pick(0, kPool - 1);
  const std::string v2 = "/v2/models/" + model_.name + "/infer";
  switch (kind) {
    case Kind::kValid:
    case Kind::kStopping: {
      rows = {pick(rng)};
      return http_request(auth_, "POST", "/infer", "{\"data\":" + pool_json_[rows[0]] + "}");
    }
    case Kind::kRows: {
      const int n = std::uniform_int_distribution<int>(1, 3)(rng);
      std::string data = "[";
      for (int i = 0; i < n; ++i) {
        rows.push_back(pick(rng));
        data += (i ? "," : "") + pool_json_[rows.back()];
      }
      const std::string body = R"({"inputs":[{"name":")" + model_.input +
                               R"(","datatype":"FP32","shape":[)" + std::to_string(n) + "," +
                               std::to_string(model_.in) + "],\"data\":" + data + "]}]}";
      return http_request(auth_, "POST", v2, body);
    }
    case Kind::kNegative: {
      std::string data = "[-1";
      for (int64_t i = 1; i < model_.in; ++i) data += ",1";
      return http_request(auth_, "POST", "/infer", "{\"data\":" + data + "]}");
    }
    case Kind::kMalformed: return http_request(auth_, "POST", "/infer", "{\"data\": [1, 2,");
    case Kind::kShortData: return http_request(auth_, "POST", "/infer", "{\"data\": [1]}");
    case Kind::kWrongType:
      return http_request(auth_, "POST", v2,
                          R"({"inputs":[{"name":")" + model_.input +
                              R"(","datatype":"INT64","shape":[1,1],"data":[1]}]})");
    case Kind::kUnknownModel:
      return http_request(auth_, "POST", "/v2/models/no_such_model/infer", "{}");
    case Kind::kWrongMethod: return http_request(auth_, "GET", "/infer");
    case Kind::kWrongToken:
      return http_request("not-" + auth_, "POST", "/infer",
                          "{\"data\":" + pool_json_[pick(rng)] + "}");
    default: return {};
  }
}

void Traffic::send(Kind kind, std::mt19937_64& rng) {
  std::vector<int> rows;
  std::string raw = build(kind, rng, rows);
  tally_.sent(kind);
  ++in_flight_;
  client_->send(std::move(raw),
                [this, kind, rows = std::move(rows)](int status, std::string_view body) {
                  if (status == 0) {
                    tally_.lost(kind, std::string(body));
                  } else {
                    tally_.answered(kind, status, std::string(body));
                    check(kind, rows, status, body);
                  }
                  --in_flight_;
                });
}

void Traffic::check(Kind kind, const std::vector<int>& rows, int status, std::string_view body) {
  // A valid request's 500 must be a batch spoiled by a negative input.
  if ((kind == Kind::kValid || kind == Kind::kRows) && status == 500 &&
      body.find("negative") == std::string_view::npos) {
    tally_.problem("a valid request answered 500 for another reason: " +
                   std::string(body.substr(0, 200)));
  }
  if (status != 200 || rows.empty()) return;
  const QJsonObject o = parse(body);
  std::vector<std::vector<double>> got;
  if (kind == Kind::kRows) {
    const QJsonObject out = o["outputs"].toArray()[0].toObject();
    const std::vector<double> shape = numbers(out["shape"]);
    const std::vector<double> data = numbers(out["data"]);
    if (shape != std::vector<double>{double(rows.size()), double(model_.out)} ||
        data.size() != rows.size() * static_cast<size_t>(model_.out)) {
      ++wrong_;
      tally_.problem("a v2 answer of the wrong shape for " + std::to_string(rows.size()) +
                     " rows: " + std::string(body.substr(0, 200)));
      return;
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      got.emplace_back(data.begin() + static_cast<long>(r * model_.out),
                       data.begin() + static_cast<long>((r + 1) * model_.out));
    }
  } else {
    got.push_back(numbers(o["result"]));
    if (got[0].size() != static_cast<size_t>(model_.out)) {
      ++wrong_;
      tally_.problem("an /infer answer of " + std::to_string(got[0].size()) + " values, not " +
                     std::to_string(model_.out));
      return;
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    ++checked_;
    if (!same_as_before(rows[r], got[r])) {
      ++wrong_;
      tally_.problem("pool input " + std::to_string(rows[r]) +
                     " got an output unlike its earlier ones: an answer crossed with another?");
    }
  }
}

bool Traffic::same_as_before(int row, const std::vector<double>& got) {
  std::lock_guard g(ref_mu_);
  auto& ref = reference_[static_cast<size_t>(row)];
  if (!ref) {
    ref = got;
    return true;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    // Batches of different sizes may round differently; other inputs'
    // outputs differ by far more than this.
    if (std::fabs(got[i] - (*ref)[i]) > 1e-4 * (1 + std::fabs((*ref)[i]))) return false;
  }
  return true;
}

Kind Traffic::pick(const Mix& mix, Kind valid_kind, std::mt19937_64& rng) const {
  if (valid_kind != Kind::kValid) return valid_kind;
  const Kind invalid[] = {Kind::kMalformed,    Kind::kShortData,   Kind::kWrongType,
                          Kind::kUnknownModel, Kind::kWrongMethod, Kind::kWrongToken};
  const int kinds = auth_.empty() ? 5 : 6;
  const double x = std::uniform_real_distribution<double>(0, 1)(rng);
  if (x < mix.negative) return Kind::kNegative;
  if (x < mix.negative + mix.invalid) {
    return invalid[std::uniform_int_distribution<int>(0, kinds - 1)(rng)];
  }
  if (x < mix.negative + mix.invalid + mix.rows) return Kind::kRows;
  return Kind::kValid;
}

double Traffic::closed_loop(int concurrency, const Mix& mix, std::chrono::milliseconds d) {
  std::mt19937_64 rng(7);
  const auto start = std::chrono::steady_clock::now();
  const uint64_t before = tally_.answered_total() + tally_.lost_total();
  const auto until = start + d;
  while (std::chrono::steady_clock::now() < until) {
    while (in_flight_.load() < concurrency) send(pick(mix, Kind::kValid, rng), rng);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const uint64_t done = tally_.answered_total() + tally_.lost_total() - before;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(done) / seconds;
}

void Traffic::open_loop(double rate, const Mix& mix, const std::atomic<bool>& stop, Kind valid_kind,
                        int64_t max_backlog) {
  std::mt19937_64 rng(11);
  std::exponential_distribution<double> gap(rate);
  auto due = std::chrono::steady_clock::now();
  while (!stop.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now < due) {
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(1)));
      continue;
    }
    const Kind k = pick(mix, valid_kind, rng);
    if (in_flight_.load() < max_backlog) {
      send(k, rng);
    } else {
      ++skipped_;
    }
    due += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(gap(rng)));
  }
}

bool Traffic::drain(std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (in_flight_.load() > 0) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace batchscope::soak
