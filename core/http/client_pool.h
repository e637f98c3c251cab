// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ClientPool: the connection plumbing of the load clients (HttpLoadClient in
// http_client.h, HttpStreamClient in http_stream_client.h). N keep-alive
// connections to one server, driven by one epoll thread; each connection
// carries one request at a time, and requests wait in a FIFO for a free
// connection. A connection that fails is opened again for the next request;
// if that fails, the request is done with status 0. Plain POSIX sockets.
//
// How an answer is read is the client's: a subclass is handed the bytes each
// connection receives (received, server_closed) and ends the request running
// on it with finish() or close().
//
// Thread-safety: send() from any thread; start() and stop() from one
// controlling thread. The hooks, and the callbacks of requests, run on the
// pool's thread, except that stop() runs the callbacks of requests still
// queued or running on the caller's thread, with status 0.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/socket.h>

#include "common/mutex.h"
#include "common/status.h"

namespace batchscope {

class ClientPool {
 public:
  // status 0 means no complete answer: the connection failed or closed, and
  // the text says why.
  using Done = std::function<void(int status, std::string_view body_or_reason)>;

  // One request: its bytes, and what ends it. A client derives from it for
  // what else its answers need.
  struct Request {
    virtual ~Request() = default;
    std::string bytes;  // complete: request line, headers, body
    Done done;
  };

  ClientPool(std::string host, uint16_t port, int connections);
  virtual ~ClientPool();
  ClientPool(const ClientPool&) = delete;
  ClientPool& operator=(const ClientPool&) = delete;

  // Opens the connections and starts the thread; the error names the host,
  // port and reason ("Connection refused").
  Status start();
  // Queues one request.
  void send(std::unique_ptr<Request> request);
  // Stops the thread, closes the connections, and ends every request still
  // queued or running with status 0, on the caller's thread. The subclass's
  // destructor must call it while its hooks can still run.
  void stop();

 protected:
  // Connection `conn` has just been opened: its reading starts afresh.
  virtual void connected(size_t conn) = 0;
  // Bytes connection `conn` received. False once the hook has closed the
  // connection.
  virtual bool received(size_t conn, std::string_view bytes) = 0;
  // The server closed connection `conn`, after every byte was handed to
  // received(): an answer that runs to the close ends here. False once the
  // hook has closed the connection; otherwise the pool closes it, and a
  // request still running is done with status 0.
  virtual bool server_closed(size_t conn) = 0;

  // Whether a request is running on connection `conn`.
  bool busy(size_t conn) const { return conns_[conn].request != nullptr; }
  // The request running on connection `conn`; busy(conn) must hold.
  Request& running(size_t conn) { return *conns_[conn].request; }
  // Takes the running request off connection `conn`, which becomes free for
  // the next one, and hands it over (to call its `done` with the answer).
  std::unique_ptr<Request> finish(size_t conn);
  // Closes connection `conn`; the request on it, if any, is done with
  // status 0 and `why`.
  void close(size_t conn, const std::string& why);

 private:
  struct Conn {
    int fd = -1;
    std::string out;  // bytes still to write
    size_t out_off = 0;
    std::unique_ptr<Request> request;  // running on this connection, or null
  };

  Status resolve();
  Status open(size_t conn);
  void flush(size_t conn);
  void dispatch();
  void readable(size_t conn);
  void loop();
  void wake_up();

  std::string host_;
  uint16_t port_;
  int connections_;
  int ep_ = -1;
  int wake_ = -1;  // eventfd: new work queued, or stop
  std::vector<Conn> conns_;
  Mutex mu_;
  std::deque<std::unique_ptr<Request>> queue_ GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
};

}  // namespace batchscope
