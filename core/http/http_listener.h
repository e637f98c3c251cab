// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The listener behind HttpServer: a listening socket and its connections
// (TcpConn), on the I/O thread. Internal to core/http: HttpServer (http_server.h) is the API.
// Each connection parses requests (HttpParser), hands them to the handler
// with a Responder, writes the answers in request order, and applies the
// rules http_server.h lists: deadlines (ReadWatch), backpressure, the send
// timeout, graceful close, and the drain when stopping; it counts every
// request read and every answer written or dropped. A streamed answer
// (begin_stream) occupies its slot in the pipeline until it ends: at the
// head of the pipeline its chunks are written as they arrive, behind it
// they wait in the slot (http_stream.cpp).
// Thread-safety: everything on the I/O thread, except the counters (any
// thread), deliver() and deliver_part() (any thread; they post to the I/O
// thread).

#include <QByteArray>
#include <QObject>
#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "http/http_server.h"
#include "http/read_watch.h"
#include "http/tcp_conn.h"

class QSocketNotifier;
class QTimer;

namespace batchscope {

// Where Responders post to; outlives the Listener so a late answer is dropped
// instead of reaching a deleted object.
struct Hub {
  struct Done {
    uint64_t conn = 0;
    uint64_t seq = 0;
    HttpResponse response;
  };
  Mutex mu;
  // Set by the Listener's constructor and cleared under mu by its destructor.
  // Other threads read it under mu; the I/O thread also reads it without mu
  // (Responder::on_disconnect), which is safe as it is only cleared once that
  // thread has ended. Hence not GUARDED_BY(mu).
  Listener* listener = nullptr;
  // Answers from other threads, waiting for the I/O thread: only the first
  // into an empty queue wakes it, so a batch's answers cost one wake-up.
  std::vector<Done> done GUARDED_BY(mu);
};

// One request's answer slot, shared by the copies of its Responder: the
// first send() or begin_stream() wins, and the last copy to go answers 500
// if neither happened, or cuts a stream that was not ended.
struct Responder::Shared {
  std::shared_ptr<Hub> hub;
  uint64_t conn = 0;
  uint64_t seq = 0;
  std::atomic<bool> sent{false};       // send() or begin_stream() happened
  std::atomic<bool> streaming{false};  // begin_stream() happened
  std::atomic<bool> ended{false};      // end_stream(), or the stream was cut
  std::atomic<bool> gone{false};       // the answer can no longer reach the client
  ~Shared();
};

// Completes request `seq` of connection `conn` on the I/O thread, from any thread.
void deliver(const std::shared_ptr<Hub>& hub, uint64_t conn, uint64_t seq, HttpResponse r);

// One step of a streamed answer.
struct StreamPart {
  enum class Kind { kBegin, kChunk, kEnd, kCut };
  Kind kind = Kind::kChunk;
  HttpResponse head;  // kBegin: status, content type and extra headers (no body)
  QByteArray bytes;   // kChunk: one chunk, its framing included
};

// Hands a stream step to the I/O thread, from any thread. Always queued,
// even on the I/O thread, so that the steps of one answer arrive in the
// order they were made whichever threads made them.
void deliver_part(const std::shared_ptr<Hub>& hub, uint64_t conn, uint64_t seq, StreamPart p);

class Listener : public QObject {
 public:
  Listener(HttpServer::Handler handler, HttpServerOptions options);
  ~Listener() override;

  Expected<uint16_t> listen(const std::string& host, uint16_t port);
  void stop_accepting();
  size_t unanswered() const;

  size_t connections() const { return conns_.size(); }

  // Stopping: no new request is read; a connection closes after its last
  // answer (at once when it has none), so the drain converges.
  void begin_drain();

  // The last resort when stopping: whatever is still open is cut, and its
  // unwritten answers are counted as dropped.
  void abort_all();
  void close_all();
  void complete(uint64_t conn, uint64_t seq, HttpResponse r);
  // Completes what other threads queued in the hub.
  void complete_queued();
  // Sends what connections were given to write in this pass of the event
  // loop (send_bytes queues them), before the loop waits again.
  void flush_written();
  void add_hook(uint64_t conn, uint64_t seq, std::function<void()> f);
  // A step of a streamed answer (http_stream.cpp).
  void stream_part(uint64_t conn, uint64_t seq, StreamPart p);

  uint64_t written() const { return written_.load(); }
  uint64_t errors() const { return errors_.load(); }

  HttpCounters counters() const;

 private:
  struct Slot {
    uint64_t seq = 0;
    bool ready = false;      // complete: nothing more will be added to `bytes`
    bool close = false;      // close the connection after this response
    bool streaming = false;  // begin_stream: `bytes` holds what is not yet written
    bool head_only = false;  // a HEAD request: a stream sends its head alone
    bool cut = false;        // a stream whose Responder went without end_stream
    int status = 0;
    QByteArray bytes;
    std::vector<std::function<void()>> hooks;
    std::weak_ptr<Responder::Shared> responder;  // told when its client has gone
  };
  // Bytes of one write not yet handed to the kernel; status 0: not an answer.
  struct Unsent {
    int64_t bytes = 0;
    int status = 0;
  };
  struct Conn {
    TcpConn* socket = nullptr;
    QTimer* idle = nullptr;
    HttpParser parser;
    ReadWatch watch;
    std::deque<Slot> pending;
    std::deque<Unsent> unsent;  // in write order
    uint64_t next_seq = 0;
    bool closing = false;              // no further requests are read
    bool paused = false;               // not read until answers drain (backpressure)
    bool lingering = false;            // the last answer is out; discarding input until close
    bool half_closed = false;          // our side shut for writing
    bool close_when_answered = false;  // stopping: linger once nothing is pending
    uint64_t discarded = 0;            // bytes read and dropped while lingering
    TimePoint linger_until = kNever;   // from the half-close
    TimePoint last_progress{};         // when bytes last left for the client
    TimePoint last_active{};           // when a request or an answer last moved
    bool over_limit = false;           // accepted beyond max_connections: one request, then close
    bool flush_queued = false;         // in to_flush_
    uint64_t id = 0;
    Conn(uint64_t i, HttpLimits l, ReadTimeouts t) : parser(l), watch(t), id(i) {}
  };

  // Runs an event handler's work; nothing may escape into Qt's event loop.
  template <class F>
  void guarded(F f) noexcept {
    try {
      f();
    } catch (const std::exception& e) {
      ++handler_exceptions_;
      std::fprintf(stderr, "batchscope: http: caught %s\n", e.what());
    } catch (...) {
      ++handler_exceptions_;
      std::fprintf(stderr, "batchscope: http: caught an unknown exception\n");
    }
  }

  Conn* find(uint64_t id);
  // Request `seq`'s slot while its answer is owed; nullptr otherwise.
  Slot* slot(Conn& c, uint64_t seq);
  void accept();
  void read(uint64_t id);
  void read_requests(uint64_t id);
  Slot& new_slot(Conn& c);

  // An answer of the server's own (a refused request, a deadline) that ends
  // the connection.
  void answer_and_close(Conn& c, uint64_t id, HttpResponse r);
  void check_deadlines(Conn& c, uint64_t id, TimePoint now);
  bool over_backlog(const Conn& c) const;
  // A streamed answer is being written or waits to be: the read deadlines
  // are off, since the client is busy reading rather than sending.
  bool live_stream(const Conn& c) const;

  // Input after the connection's last request: read (so the kernel does not
  // answer it with a reset) and dropped, up to the linger limit.
  void discard(Conn& c);
  // The client shut its side of the connection (half-closed, or closed:
  // TCP cannot tell the two apart until a write fails): no request comes
  // after the ones read, each of those is answered and written, and then
  // the connection closes. A request cut short was never read: it gets no
  // answer, as when its client is gone.
  void input_ended(Conn& c);
  // Closes the connection once what is written has left, from the event
  // loop rather than here: callers hold `c`.
  void close_later(uint64_t id);
  // Writes the answers at the head of the pipeline that are ready, and
  // whatever a stream at its head has produced so far.
  void flush(Conn& c);
  // The stream at the head of the pipeline was never ended: what it
  // produced goes out, the answers behind it are dropped (they may not
  // follow an unfinished one), and the connection closes gracefully.
  void cut_stream(Conn& c);
  // Answers that will never be written: counted as dropped, their clients
  // marked gone, their cancel hooks run.
  void drop_pending(Conn& c);
  void drop_slots(std::deque<Slot>& owed);

  // Buffered: write() does not emit signals, so callers' `c` stays valid.
  // The send timeout counts from when bytes start waiting. An answer
  // (`status` > 0) counts as written once its last byte has left for the
  // kernel (on_written), not when it is handed to the socket: one still in
  // the socket's buffer when the connection goes is counted as dropped.
  void send_bytes(Conn& c, const QByteArray& bytes, int status);
  void count_written(int status);

  // Graceful close: the answer goes out, our side is shut once it is
  // written (not before: the linger time starts then), and input is
  // discarded until the client closes or the linger limits pass (tick()
  // then aborts). Nothing here may emit a signal: callers hold `c`.
  void linger(Conn& c);
  void half_close(Conn& c);
  void on_written(uint64_t id, qint64 n);
  void resume_if_drained(Conn& c);

  // Accepting, and the connection limit (http_accept.cpp). The listening
  // socket is the listener's own, not a QTcpServer's, so that an accept that
  // fails (out of descriptors) is seen: QTcpServer retries one on every
  // pass of the event loop, spinning a core.
  Expected<uint16_t> open_listening_socket(const std::string& host, uint16_t port);
  // Connections from `first_new` on were accepted in this pass: not read
  // yet, so never taken for idle.
  // The next connection, or nullptr when none is waiting or accepting
  // failed (counted, and accepting paused for a moment).
  TcpConn* accept_one(uint64_t first_new);
  // Whether a connection may be accepted now: below the limit, a spare
  // over-limit place, or an idle connection to close; false: accepting
  // paused until a connection closes.
  bool may_accept(uint64_t first_new);
  // Makes room for an accepted connection; false: it is over the limit.
  bool place(uint64_t first_new);
  // The keep-alive connection idle the longest, or nullptr.
  Conn* idlest(uint64_t first_new);
  bool make_room(uint64_t first_new);
  // A request on a connection over the limit: answered 503 here unless it
  // is a health check; either way the connection closes after it. True
  // when answered here.
  bool refuse_over_limit(Conn& c, const HttpRequest& req, Slot& s);
  void pause_accepting();
  void resume_accepting();
  static constexpr size_t kOverLimitConnections = 16;

  void tick();
  void gone(uint64_t id);
  QByteArray serialize(const HttpResponse& r, bool close) const;
  QByteArray serialize_stream_head(const HttpResponse& r, bool close) const;

  HttpServer::Handler handler_;
  HttpServerOptions options_;
  ReadTimeouts timeouts_;
  std::shared_ptr<Hub> hub_;
  int listen_fd_ = -1;
  QSocketNotifier* accept_notifier_ = nullptr;
  QTimer* ticker_ = nullptr;
  QTimer* retry_accept_ = nullptr;
  size_t max_connections_ = 0;
  size_t over_limit_ = 0;  // connections open beyond the limit
  std::vector<uint64_t> to_flush_;
  bool accepting_paused_ = false;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_conn_ = 0;

  std::atomic<uint64_t> parsed_{0};
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> handler_exceptions_{0};
  std::atomic<uint64_t> open_{0};
  std::atomic<uint64_t> closed_for_room_{0};
  std::atomic<uint64_t> refused_at_limit_{0};
  std::atomic<uint64_t> accept_errors_{0};
  std::array<std::atomic<uint64_t>, 600> by_status_{};
};

}  // namespace batchscope
