// SPDX-License-Identifier: GPL-3.0-or-later
// soak: runs a server under a mix of valid, invalid, oversized, slow and
// disconnecting clients at a share of its measured capacity, with a retune
// every 100 ms, then stops it with SIGTERM while traffic flows, and checks
// the accounting exactly:
//  - per status, what the clients read equals the /metrics delta, except
//    for answers to clients that left without reading; those, plus the
//    answers the server dropped, equal what those clients sent;
//  - sent = ok + rejected + timed out + invalid + errors (+ abandoned);
//    every answer is one its request may get, and none went missing;
//  - every 200 carries an output of the right length, the same for the same
//    input every time;
//  - the server neither crashed nor grew (RSS after warm-up, within a bound);
//  - on SIGTERM it answered every request it had read, exited 0, and its
//    own accounting line balances.
// Usage: soak [--seconds S | --minutes M] [--load 0.8] [--token T] [--max-body-bytes N]
//             [--rss-growth 0.05] -- SERVER COMMAND...
// Exit status 0 when every check holds.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <csignal>
#include <cstdio>
#include <map>
#include <regex>
#include <thread>

#include "tests/soak/faults.h"
#include "tests/soak/server_process.h"
#include "tests/soak/traffic.h"

namespace batchscope::soak {
namespace {

struct Args {
  double seconds = 60;
  double load = 0.8;
  std::string token;
  size_t max_body_bytes = 16u << 20;
  double rss_growth = 0.05;
  std::vector<std::string> server;
};

bool parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--") {
      for (++i; i < argc; ++i) a.server.push_back(argv[i]);
    } else if (s == "--seconds") {
      a.seconds = std::stod(value());
    } else if (s == "--minutes") {
      a.seconds = 60 * std::stod(value());
    } else if (s == "--load") {
      a.load = std::stod(value());
    } else if (s == "--token") {
      a.token = value();
    } else if (s == "--max-body-bytes") {
      a.max_body_bytes = std::stoul(value());
    } else if (s == "--rss-growth") {
      a.rss_growth = std::stod(value());
    } else {
      std::fprintf(stderr, "soak: unknown argument %s\n", s.c_str());
      return false;
    }
  }
  return !a.server.empty() && a.seconds > 0;
}

// The counters of one /metrics scrape that the accounting needs.
struct Scrape {
  std::map<int, uint64_t> by_status;
  uint64_t received = 0;
  uint64_t dropped = 0;
  std::map<std::string, uint64_t> outcomes;
  uint64_t admitted = 0;
  double queue_depth = 0;
  bool ok = false;
};

Scrape scrape(const Target& t, Tally& tally) {
  Scrape s;
  std::string body;
  tally.sent(Kind::kScrape);
  const int status = one_request(t, http_request(t.auth, "GET", "/metrics"), &body);
  if (status == 0) {
    tally.lost(Kind::kScrape, "no answer to GET /metrics");
    return s;
  }
  tally.answered(Kind::kScrape, status, body);
  const std::regex code(R"re(^batchscope_http_responses_total\{code="(\d+)"\} (\d+)$)re");
  const std::regex outcome(R"re(^batchscope_requests_total\{outcome="(\w+)"\} (\d+)$)re");
  std::smatch m;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find('\n', pos);
    const std::string line = body.substr(pos, end - pos);
    pos = end == std::string::npos ? body.size() : end + 1;
    if (std::regex_match(line, m, code)) s.by_status[std::stoi(m[1])] = std::stoull(m[2]);
    if (std::regex_match(line, m, outcome)) s.outcomes[m[1]] = std::stoull(m[2]);
    if (line.rfind("batchscope_http_received_total ", 0) == 0)
      s.received = std::stoull(line.substr(31));
    if (line.rfind("batchscope_http_dropped_total ", 0) == 0)
      s.dropped = std::stoull(line.substr(30));
    if (line.rfind("batchscope_queue_depth ", 0) == 0) s.queue_depth = std::stod(line.substr(23));
    if (line.rfind("batchscope_requests_admitted_total ", 0) == 0)
      s.admitted = std::stoull(line.substr(35));
  }
  s.ok = status == 200;
  return s;
}

uint64_t sum(const std::map<int, uint64_t>& m) {
  uint64_t n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? " ok " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

std::optional<ModelShape> discover(const Target& t) {
  std::string body;
  if (one_request(t, http_request(t.auth, "GET", "/health"), &body) != 200) return {};
  ModelShape m;
  m.name = QJsonDocument::fromJson(QByteArray::fromStdString(body))
               .object()["model"]
               .toString()
               .toStdString();
  if (one_request(t, http_request(t.auth, "GET", "/v2/models/" + m.name), &body) != 200) return {};
  const QJsonObject meta = QJsonDocument::fromJson(QByteArray::fromStdString(body)).object();
  const QJsonObject in = meta["inputs"].toArray()[0].toObject();
  const QJsonObject out = meta["outputs"].toArray()[0].toObject();
  if (in["datatype"].toString() != "FP32" || in["shape"].toArray().size() != 2) return {};
  m.input = in["name"].toString().toStdString();
  m.in = in["shape"].toArray()[1].toInteger();
  m.out = out["shape"].toArray()[1].toInteger();
  return m;
}

int run(const Args& a) {
  ServerProcess server(a.server);
  if (!server.start(std::chrono::seconds(120))) return 1;
  Target t{server.host(), server.port(), a.token, a.max_body_bytes, 16, 4};
  const auto model = discover(t);
  if (!model) {
    std::fprintf(stderr, "soak: the server's model is not one FP32 input [-1, N]\n");
    return 1;
  }
  t.in = model->in;
  std::string meta;
  one_request(t, http_request(t.auth, "GET", "/v2/models/" + model->name), &meta);
  t.model_max_batch =
      QJsonDocument::fromJson(QByteArray::fromStdString(meta)).object()["max_batch_size"].toInt(16);
  std::printf("soak: %s at %s:%u, model %s (%lld in, %lld out), %.0f s\n", a.server[0].c_str(),
              t.host.c_str(), t.port, model->name.c_str(), static_cast<long long>(model->in),
              static_cast<long long>(model->out), a.seconds);

  Tally tally;
  Traffic traffic(t.host, t.port, *model, a.token, tally, 3, 32);
  if (!traffic.start()) return std::fprintf(stderr, "soak: cannot connect\n"), 1;
  one_request(t, http_request(t.auth, "PUT", "/v1/config", calm_options()));
  const double capacity = traffic.closed_loop(32, Mix{}, std::chrono::milliseconds(5000));
  traffic.drain(std::chrono::seconds(30));
  const double rate = a.load * capacity;
  std::printf(
      "soak: capacity %.0f answers/s (closed loop, 32 in flight, the main phase's mix of "
      "requests); driving at %.0f/s\n",
      capacity, rate);
  check(tally.problem_count() == 0 && tally.lost_total() == 0,
        "the capacity run's " + std::to_string(tally.answered_total()) +
            " answers were each one its request may get");
  tally.reset_status_counts();
  // A quarter second of arrivals may wait in the client; beyond that, skip.
  const auto backlog_cap = static_cast<int64_t>(std::max(64.0, rate / 4));

  // ---- the main phase, between two scrapes ----
  const Scrape before = scrape(t, tally);
  std::atomic<bool> stop_faults{false}, stop_traffic{false};
  std::vector<std::thread> faults;
  faults.emplace_back([&] { oversized_client(t, tally, stop_faults); });
  faults.emplace_back([&] { slow_client(t, tally, stop_faults, false); });
  faults.emplace_back([&] { slow_client(t, tally, stop_faults, true); });
  faults.emplace_back([&] { disconnecting_client(t, tally, stop_faults); });
  faults.emplace_back([&] { retune_client(t, tally, stop_faults, 17); });
  faults.emplace_back([&] { resetting_client(t, tally, stop_faults); });
  faults.emplace_back([&] { stalled_reader(t, tally, stop_faults); });
  std::thread load(
      [&] { traffic.open_loop(rate, Mix{}, stop_traffic, Kind::kValid, backlog_cap); });

  const auto start = std::chrono::steady_clock::now();
  using Clock = std::chrono::steady_clock;
  const Clock::time_point warm = start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(a.seconds * 0.25));
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  uint64_t rss_warm = 0, rss_max = 0, rss_end = 0;
  int64_t backlog_max = 0;
  for (int second = 1; std::chrono::steady_clock::now() < end; ++second) {
    std::this_thread::sleep_until(
        std::min<Clock::time_point>(end, start + std::chrono::seconds(second)));
    if (!server.alive()) break;
    const uint64_t rss = server.rss_kib();
    if (rss_warm == 0 && std::chrono::steady_clock::now() >= warm) rss_warm = rss;
    if (rss_warm) rss_max = std::max(rss_max, rss);
    rss_end = rss;
    backlog_max = std::max(backlog_max, traffic.in_flight());
    if (second % 10 == 0) {
      std::printf("  %4d s: sent %llu, answered %llu, in flight %lld, RSS %llu KiB\n", second,
                  static_cast<unsigned long long>(tally.sent_total()),
                  static_cast<unsigned long long>(tally.answered_total()),
                  static_cast<long long>(traffic.in_flight()),
                  static_cast<unsigned long long>(rss));
      std::fflush(stdout);
    }
  }
  stop_faults = true;
  for (std::thread& f : faults) f.join();
  stop_traffic = true;
  load.join();
  const bool drained = traffic.drain(std::chrono::seconds(60));
  const bool alive = server.alive();
  // Quiet options, then wait until every request read has been answered.
  tally.sent(Kind::kRetune);
  tally.answered(Kind::kRetune,
                 one_request(t, http_request(t.auth, "PUT", "/v1/config", calm_options())));
  Scrape after;
  for (int i = 0; i < 100; ++i) {
    after = scrape(t, tally);
    // The scrape itself is read but not yet answered when it is rendered;
    // the engine is idle once everything it admitted has completed.
    uint64_t done = 0;
    for (const char* o : {"ok", "timeout", "cancelled", "error", "shutdown"}) {
      done += after.outcomes.count(o) ? after.outcomes.at(o) : 0;
    }
    if (!after.ok || (after.received == sum(after.by_status) + after.dropped + 1 &&
                      after.admitted == done && after.queue_depth == 0)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Its own answer is written after it was rendered: not in its counts.
  std::map<int, uint64_t> client = tally.by_status();
  client[200] -= 1;

  std::printf(
      "\nsoak: main phase, %.0f s at %.0f requests/s; %llu arrivals skipped while %lld "
      "were in flight (the server fell behind)\n",
      a.seconds, rate, static_cast<unsigned long long>(traffic.skipped()),
      static_cast<long long>(backlog_cap));
  std::printf("  %-22s %12s\n", "request kind", "sent");
  for (const auto& [k, n] : tally.sent_by_kind()) {
    std::printf("  %-22s %12llu\n", kind_name(k), static_cast<unsigned long long>(n));
  }
  std::printf("  %-22s %12llu  (sent complete, then the client left)\n", "abandoned",
              static_cast<unsigned long long>(tally.abandoned_total()));
  std::printf("  %-22s %12llu  (sent complete, then the client reset; read or not)\n", "reset",
              static_cast<unsigned long long>(tally.reset_total()));
  std::printf("\n  %6s %-10s %12s %12s %10s\n", "status", "bucket", "clients read", "/metrics",
              "abandoned");
  std::map<int, uint64_t> server_delta;
  for (const auto& [code, n] : after.by_status) {
    const uint64_t was = before.by_status.count(code) ? before.by_status.at(code) : 0;
    server_delta[code] = n - was;
  }
  bool per_status = true;
  uint64_t to_abandoned = 0;
  std::map<int, bool> codes;
  for (const auto& [c, n] : server_delta) codes[c] = true;
  for (const auto& [c, n] : client) codes[c] = true;
  std::map<std::string, uint64_t> buckets;  // the server's answers, by the issue's buckets
  for (const auto& [c, unused] : codes) {
    const uint64_t s = server_delta.count(c) ? server_delta[c] : 0;
    const uint64_t k = client.count(c) ? client[c] : 0;
    if (s < k) per_status = false;
    to_abandoned += s >= k ? s - k : 0;
    buckets[bucket_of(c)] += s;
    std::printf("  %6d %-10s %12llu %12llu %10llu\n", c, bucket_of(c),
                static_cast<unsigned long long>(k), static_cast<unsigned long long>(s),
                static_cast<unsigned long long>(s >= k ? s - k : 0));
  }
  const uint64_t dropped = after.dropped - before.dropped;
  const uint64_t abandoned = tally.abandoned_total();
  std::printf("  dropped (the client had gone) %llu\n\n", static_cast<unsigned long long>(dropped));

  check(alive, "the server is alive after the main phase");
  check(drained, "every request sent got its answer (or failed) within 60 s of the end");
  check(per_status, "per status, /metrics counts at least what the clients read");
  // A reset client's request may or may not have been read: each of these
  // holds exactly, within the number of such requests.
  const uint64_t resets = tally.reset_total();
  auto within = [&](uint64_t have, uint64_t want) { return have >= want && have <= want + resets; };
  check(within(to_abandoned + dropped, abandoned),
        "answers beyond what the clients read (" + std::to_string(to_abandoned) + ") + dropped (" +
            std::to_string(dropped) + ") = requests of clients that left (" +
            std::to_string(abandoned) + ") + those of the " + std::to_string(resets) +
            " resets the server read");
  // Client side against server side: what the clients sent (the last
  // scrape's answer is outside the delta) and what the server answered.
  const uint64_t sent = tally.sent_total() - 1;
  const uint64_t answered_by_server = buckets["ok"] + buckets["rejected"] + buckets["timed out"] +
                                      buckets["invalid"] + buckets["errors"];
  check(within(answered_by_server + dropped, sent + abandoned),
        "sent " + std::to_string(sent) + " + abandoned " + std::to_string(abandoned) +
            " = the server's ok " + std::to_string(buckets["ok"]) + " + rejected " +
            std::to_string(buckets["rejected"]) + " + timed out " +
            std::to_string(buckets["timed out"]) + " + invalid " +
            std::to_string(buckets["invalid"]) + " + errors " + std::to_string(buckets["errors"]) +
            " + dropped " + std::to_string(dropped) + " (less the resets it read)");
  check(tally.lost_total() == 0, "no request went unanswered");
  // Read between the scrapes: what the clients read (less the first scrape,
  // read before it) plus the last scrape, plus the abandoned requests.
  check(within(after.received - before.received, sum(client) + abandoned),
        "requests the server read (" + std::to_string(after.received - before.received) +
            ") = those sent complete between the scrapes (less the resets it never read)");
  check(traffic.wrong_outputs() == 0, std::to_string(traffic.checked_outputs()) +
                                          " outputs checked: right length, same for the "
                                          "same input (" +
                                          std::to_string(traffic.wrong_outputs()) + " wrong)");
  check(tally.problem_count() == 0,
        std::to_string(tally.problem_count()) + " answers a request of its kind may not get");
  for (const std::string& p : tally.problems()) std::printf("         %s\n", p.c_str());
  const double growth = rss_warm ? (double(rss_end) - double(rss_warm)) / double(rss_warm) : 1;
  char rss_text[160];
  std::snprintf(
      rss_text, sizeof rss_text,
      "RSS after warm-up %llu KiB, at the end %llu KiB (max %llu): growth %.2f%% (limit %.0f%%)",
      static_cast<unsigned long long>(rss_warm), static_cast<unsigned long long>(rss_end),
      static_cast<unsigned long long>(rss_max), 100 * growth, 100 * a.rss_growth);
  check(growth < a.rss_growth, rss_text);
  uint64_t completed = 0;
  for (const char* o : {"ok", "timeout", "cancelled", "error", "shutdown"}) {
    completed += after.outcomes.count(o) ? after.outcomes.at(o) : 0;
  }
  check(after.admitted == completed, "the engine completed every request it admitted (" +
                                         std::to_string(after.admitted) + " = " +
                                         std::to_string(completed) + ")");
  std::printf(
      "  engine: %llu ok, %llu rejected, %llu invalid, %llu timed out, %llu cancelled, "
      "%llu model errors; client backlog at most %lld\n",
      static_cast<unsigned long long>(after.outcomes["ok"]),
      static_cast<unsigned long long>(after.outcomes["rejected"]),
      static_cast<unsigned long long>(after.outcomes["invalid"]),
      static_cast<unsigned long long>(after.outcomes["timeout"]),
      static_cast<unsigned long long>(after.outcomes["cancelled"]),
      static_cast<unsigned long long>(after.outcomes["error"]),
      static_cast<long long>(backlog_max));

  // ---- SIGTERM while traffic flows ----
  std::printf("\nsoak: SIGTERM while traffic flows\n");
  tally.reset_status_counts();
  std::atomic<bool> stop_stopping{false};
  std::thread stopping(
      [&] { traffic.open_loop(rate, Mix{}, stop_stopping, Kind::kStopping, backlog_cap); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  server.signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  stop_stopping = true;
  stopping.join();
  // Longer than the server's send timeout (30 s by default): a connection
  // whose client stopped reading is closed only when that timeout passes,
  // and the requests queued behind it on that connection end with it.
  const bool stop_drained = traffic.drain(std::chrono::seconds(60));
  const auto code = server.wait(std::chrono::seconds(60));
  uint64_t answered = tally.answered_total();
  std::printf("  sent %llu while stopping; answers:",
              static_cast<unsigned long long>(tally.sent_total()));
  for (const auto& [c, n] : tally.by_status()) {
    std::printf(" %d x %llu", c, static_cast<unsigned long long>(n));
  }
  std::printf("; refused or closed before being read: %llu\n",
              static_cast<unsigned long long>(tally.lost_total()));
  check(stop_drained, "every request sent while stopping got an answer or a closed connection");
  check(code && *code == 0,
        "the server exited 0 (" + (code ? std::to_string(*code) : "no exit") + ")");
  const std::regex acct(
      R"(accounting: http received (\d+) = written (\d+) \+ dropped (\d+) \+ unanswered (\d+); engine admitted (\d+) = completed (\d+))");
  std::smatch m;
  bool found = false;
  for (const std::string& line : server.lines()) {
    if (!std::regex_search(line, m, acct)) continue;
    found = true;
    const uint64_t received = std::stoull(m[1]), written = std::stoull(m[2]),
                   dropped_all = std::stoull(m[3]), unanswered = std::stoull(m[4]);
    check(unanswered == 0 && std::stoull(m[5]) == std::stoull(m[6]),
          "the server answered every request it read, and the engine completed every request "
          "it admitted (" +
              m[0].str() + ")");
    // Since the last scrape was rendered: its answer, and the stop phase's.
    const uint64_t written_since = written - sum(after.by_status) - 1;
    check(written_since == answered && dropped_all == after.dropped,
          "answers written after the last scrape (" + std::to_string(written_since) +
              ") = answers the clients read while it stopped (" + std::to_string(answered) +
              "), none dropped");
    check(received - after.received == answered,
          "every request the server read while stopping was answered; the " +
              std::to_string(tally.lost_total()) + " others never reached it");
  }
  check(found, "the server printed its accounting line");
  check(tally.problem_count() == 0, "answers while stopping were 200, 503, 429 or 504");
  for (const std::string& p : tally.problems()) std::printf("         %s\n", p.c_str());
  std::printf("\nsoak: %s\n", failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace batchscope::soak

int main(int argc, char** argv) {
  batchscope::soak::Args a;
  if (!batchscope::soak::parse_args(argc, argv, a)) {
    std::fprintf(stderr,
                 "usage: soak [--seconds S | --minutes M] [--load 0.8] [--token T] "
                 "[--max-body-bytes N] [--rss-growth 0.05] -- SERVER COMMAND...\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  return batchscope::soak::run(a);
}
