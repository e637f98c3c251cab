// SPDX-License-Identifier: GPL-3.0-or-later
// The listener's streamed answers (Responder::begin_stream): a chunked
// answer whose chunks reach the I/O thread one by one and are written as
// they arrive when the answer is at the head of its connection's pipeline.
// The rules of http_server.h hold for them as for whole answers.

#include <algorithm>
#include "http/tcp_conn.h"

#include "http/http_listener.h"

namespace batchscope {

void deliver_part(const std::shared_ptr<Hub>& hub, uint64_t conn, uint64_t seq, StreamPart p) {
  MutexLock g(hub->mu);
  Listener* l = hub->listener;
  if (!l) return;
  QMetaObject::invokeMethod(
      l, [l, conn, seq, p = std::move(p)]() mutable { l->stream_part(conn, seq, std::move(p)); },
      Qt::QueuedConnection);
}

void Listener::stream_part(uint64_t conn, uint64_t seq, StreamPart p) {
  guarded([&] {
    Conn* c = find(conn);
    Slot* s = c ? slot(*c, seq) : nullptr;
    if (!s || s->ready || (p.kind != StreamPart::Kind::kBegin && !s->streaming)) return;
    switch (p.kind) {
      case StreamPart::Kind::kBegin:
        if (s->streaming) return;
        s->streaming = true;
        s->status = p.head.status;
        s->bytes = serialize_stream_head(p.head, s->close);
        break;
      case StreamPart::Kind::kChunk: {
        if (s->head_only) return;  // a HEAD answer has no content
        s->bytes.append(p.bytes);
        // Unwritten bytes stay bounded: a client that does not read while
        // its stream goes on is cut, not buffered for. gone() counts the
        // answer as dropped and runs its cancel hooks.
        const bool front = s == &c->pending.front();
        const qint64 waiting = s->bytes.size() + (front ? c->socket->bytes_to_write() : 0);
        if (static_cast<uint64_t>(waiting) > options_.max_unwritten_bytes) {
          c->socket->abort();
          return;
        }
        break;
      }
      case StreamPart::Kind::kEnd:
        if (!s->head_only) s->bytes.append("0\r\n\r\n", 5);
        s->ready = true;
        break;
      case StreamPart::Kind::kCut:
        s->cut = true;
        s->ready = true;
        break;
    }
    // A complete answer's cancel hooks die after the flush: a hook's
    // destructor may answer another request, which must not move the
    // queue under `s`.
    const auto hooks = p.kind == StreamPart::Kind::kEnd ? std::move(s->hooks)
                                                        : std::vector<std::function<void()>>{};
    flush(*c);
  });
}

void Listener::cut_stream(Conn& c) {
  Slot& s = c.pending.front();
  if (!s.bytes.isEmpty() && !s.head_only) send_bytes(c, s.bytes, 0);
  ++dropped_;  // never complete: no last chunk will follow
  c.pending.pop_front();
  linger(c);
  drop_pending(c);
}

void Listener::drop_pending(Conn& c) {
  // Taken out first: a hook may answer another request of this connection,
  // which then finds no slot.
  std::deque<Slot> rest;
  rest.swap(c.pending);
  drop_slots(rest);
}

void Listener::drop_slots(std::deque<Slot>& owed) {
  dropped_ += owed.size();
  for (Slot& s : owed) {
    if (auto r = s.responder.lock()) r->gone = true;
    const auto hooks = std::move(s.hooks);
    for (const auto& hook : hooks) guarded(hook);
  }
}

bool Listener::live_stream(const Conn& c) const {
  return std::any_of(c.pending.begin(), c.pending.end(),
                     [](const Slot& s) { return s.streaming && !s.ready; });
}

QByteArray Listener::serialize_stream_head(const HttpResponse& r, bool close) const {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + status_reason(r.status) +
                     "\r\nContent-Type: " + r.content_type +
                     "\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache\r\n";
  if (close) head += "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  head += "\r\n";
  return QByteArray(head.data(), static_cast<qsizetype>(head.size()));
}

}  // namespace batchscope
