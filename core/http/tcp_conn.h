// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One accepted TCP connection on the I/O thread's event loop: what the
// listener used QTcpSocket for, with two differences that QTcpSocket cannot
// make.
//  - A peer that shuts its side for writing (shutdown(SHUT_WR), as `nc -N`
//    and some proxies do) is reported as finished sending, not as gone: the
//    connection stays open for the answers it asked for. QTcpSocket closes
//    its descriptor on the end of the stream.
//  - What is written is sent when its owner calls flush(), once per pass of
//    the event loop, so everything written in a pass leaves in one
//    sendmsg(), however many answers it holds; the socket notifier for
//    writing is on only while the kernel's buffer is full. (Turning a
//    notifier on and off wakes the GLib event loop through its eventfd: two
//    system calls an answer when it is toggled for each.)
// Reads are buffered up to a cap (read_cap); at the cap the connection is
// not read until take_input() empties the buffer, so a peer the listener
// stops reading is held back by TCP.
// Thread-safety: the I/O thread only.

#include <QByteArray>
#include <QObject>
#include <cstdint>
#include <deque>
#include <functional>

class QSocketNotifier;

namespace batchscope {

class TcpConn : public QObject {
 public:
  // Takes `fd` (non-blocking, connected); sets TCP_NODELAY.
  TcpConn(int fd, int64_t read_cap, QObject* parent);
  ~TcpConn() override;

  // Input arrived, or the peer finished sending (peer_finished()).
  std::function<void()> on_readable;
  // `n` more bytes left for the peer's kernel.
  std::function<void(int64_t n)> on_written;
  // The connection is closed: by the peer (a reset, a failed write), by
  // abort(), or by close() once its bytes are out. Called once, possibly
  // from inside abort() or close().
  std::function<void()> on_closed;

  // What has been read so far, emptying the buffer.
  QByteArray take_input();
  // The peer shut its side: nothing more will arrive.
  bool peer_finished() const { return peer_finished_; }

  // Queued; sent by flush(), with whatever else is queued.
  void write(QByteArray bytes);
  // Sends what is queued now; what the kernel does not take is sent when
  // the socket is writable again.
  void flush();
  int64_t bytes_to_write() const { return unsent_; }

  // Shuts our side for writing (the peer reads the end of the stream).
  void shutdown_write();
  // Closes once what is queued is out (at once when nothing is).
  void close();
  // Closes now; what is queued is dropped.
  void abort();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  void read_ready();
  void send_queued();
  void finish();  // closes the descriptor and reports it

  int fd_ = -1;
  int64_t read_cap_;
  QSocketNotifier* reader_ = nullptr;
  QSocketNotifier* writer_ = nullptr;
  QByteArray input_;
  std::deque<QByteArray> queue_;
  int64_t head_offset_ = 0;  // bytes of queue_.front() already sent
  int64_t unsent_ = 0;
  bool peer_finished_ = false;
  bool closing_ = false;
};

}  // namespace batchscope
