// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `batchscope serve` for a generative model: the generation engine behind
// the HTTP listener (GenerationService's routes), headless.

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>

#include "app/lm_setup.h"
#include "app/serve_record.h"
#include "common/options.h"
#include "http/http_server.h"
#include "http/service_access.h"

namespace batchscope {

struct GenServeSetup {
  LmChoice model;
  Options options;
  ServiceAccess access;
  HttpServerOptions listener;
  std::string host;
  uint16_t port = 8000;
  ServeRecordChoice record;
};

// Returns once SIGINT or SIGTERM (blocked in `stop_signals`) arrives,
// calling `every_second` while it waits.
void wait_for_stop_signal(const sigset_t& stop_signals, const std::function<void()>& every_second);

// Serves until SIGINT or SIGTERM (blocked in `stop_signals` by the caller),
// then finishes the admitted requests and prints the accounting; the exit code.
int serve_generation(int argc, char** argv, const GenServeSetup& setup,
                     const sigset_t& stop_signals);

}  // namespace batchscope
