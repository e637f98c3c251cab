// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The generation view's HTTP listener: local clients send completions to the
// view's engine while an experiment runs, beside the built-in traffic and
// the prompt box, and their requests show in the same plots and step
// inspector. A box with the host and port, a Start/Stop button and a label
// with the address, the routes, the answered and refused counts and, when
// the host is not loopback, who can reach it.
//
// It runs GenerationService (OpenAI completions, Triton's generate and
// generate_stream, /metrics, /v1/config) behind an HttpServer, which serves
// on an I/O thread of its own. The view drains the engine's records; GET
// /metrics reports the totals the view folds from them (publish()), so the
// service never drains the engine itself.
//
// Stopping: the service refuses new requests (503), the server answers what
// it has read for up to 2 s and closes. Requests the service admitted may
// still be queued or running in the engine, and their completions use the
// service, so a stopped service is kept rather than destroyed: whoever
// stops the engine takes them with take_services() and keeps them until the
// engine has stopped (GenMainWindow does). Services still here when the
// listener is destroyed go with it: the engine must have stopped by then.
// Thread-safety: GUI thread only; the published totals are read on the I/O
// thread under a lock of their own.

#include <QGroupBox>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/generation_service.h"
#include "generation/gen_engine.h"
#include "generation/gen_metrics.h"
#include "http/http_server.h"
#include "http/service_access.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace batchscope {

struct GenListenerConfig {
  std::string host = "127.0.0.1";  // the host field's first value
  int listen_port = -1;            // >= 0: listen at once (0: any free port); else 8000 is offered
  ServiceAccess access;            // the bearer token and read-only configuration
  size_t max_connections = 0;      // the connection limit; 0: from the descriptor limit
  std::string device = "cpu";      // reported by /health and /metrics
  std::string version;             // reported by /metrics and GET /v2
};

class GenListener : public QGroupBox {
 public:
  // Starts listening at once when config.listen_port >= 0; a failure shows in the box.
  GenListener(GenEngine& engine, GenListenerConfig config, QWidget* parent = nullptr);
  ~GenListener() override;  // stops

  // Listens on host:port (0 picks a free port); the bound port.
  Expected<uint16_t> start(const std::string& host, uint16_t port);
  void stop();
  bool running() const { return server_ != nullptr; }
  uint16_t port() const { return port_; }  // while running
  // Every service this listener has run, the running one stopped first.
  std::vector<std::unique_ptr<GenerationService>> take_services();

  // The view's all-time totals, for /metrics.
  void publish(const GenWindow& totals);
  // The label's counts (cheap: sets the text only when it changed).
  void refresh();

  QString text() const;
  QPushButton* button() const { return button_; }

 private:
  struct Published {
    std::mutex mu;
    GenWindow totals;
  };
  void toggle();
  QString routes() const;

  GenEngine& engine_;
  GenListenerConfig config_;
  std::shared_ptr<Published> published_ = std::make_shared<Published>();
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<HttpServer> server_;
  std::vector<std::unique_ptr<GenerationService>> retired_;  // stopped; see the header
  uint16_t port_ = 0;
  std::string host_bound_;
  QString warning_;  // under the routes when the host is not loopback

  QLineEdit* host_ = nullptr;
  QSpinBox* port_field_ = nullptr;
  QPushButton* button_ = nullptr;
  QLabel* label_ = nullptr;
};

}  // namespace batchscope
