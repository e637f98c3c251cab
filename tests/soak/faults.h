// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The soak's hostile and careless clients, each on a thread of its own with
// plain blocking sockets, until told to stop (a client mid-request finishes
// it first, so that every answer it is owed is counted):
//  - oversized: a body over the server's limit written in full (413), a
//    1 MiB header line (431);
//  - slow: a head or a body trickled a byte every 250 ms (408);
//  - disconnecting: 1..3 complete requests (and now and then half of one)
//    sent, then the connection closed without reading;
//  - resetting: a request with Connection: close, then a reset instead of a
//    FIN (the server may or may not have read it);
//  - stalled reader: 300 requests pipelined, two seconds without reading,
//    then every answer read (backpressure, then recovery);
//  - retune: PUT /v1/config every 100 ms, now and then out of range (400).
// Thread-safety: each function runs on its own thread; they share a Tally.

#include <atomic>
#include <cstdint>
#include <string>

#include "tests/soak/tally.h"

namespace batchscope::soak {

struct Target {
  std::string host;
  uint16_t port = 0;
  std::string auth;  // bearer token, or empty
  size_t max_body_bytes = 16u << 20;
  int model_max_batch = 16;
  int64_t in = 4;  // values per row
};

void oversized_client(const Target& t, Tally& tally, const std::atomic<bool>& stop);
void slow_client(const Target& t, Tally& tally, const std::atomic<bool>& stop, bool body);
void disconnecting_client(const Target& t, Tally& tally, const std::atomic<bool>& stop);
void retune_client(const Target& t, Tally& tally, const std::atomic<bool>& stop, uint64_t seed);
void resetting_client(const Target& t, Tally& tally, const std::atomic<bool>& stop);
void stalled_reader(const Target& t, Tally& tally, const std::atomic<bool>& stop);

// One request on a connection of its own: the answer's status (0: none).
int one_request(const Target& t, const std::string& raw, std::string* body = nullptr);
// Options that keep the server responsive, applied before the accounting.
std::string calm_options();

}  // namespace batchscope::soak
