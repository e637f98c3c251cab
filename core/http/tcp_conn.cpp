// SPDX-License-Identifier: GPL-3.0-or-later
#include "http/tcp_conn.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <QSocketNotifier>
#include <algorithm>
#include <cerrno>

namespace batchscope {

namespace {
constexpr int64_t kReadChunk = 64 * 1024;
constexpr size_t kGather = 64;  // buffers per writev
}  // namespace

TcpConn::TcpConn(int fd, int64_t read_cap, QObject* parent)
    : QObject(parent), fd_(fd), read_cap_(std::max<int64_t>(read_cap, kReadChunk)) {
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  reader_ = new QSocketNotifier(fd_, QSocketNotifier::Read, this);
  writer_ = new QSocketNotifier(fd_, QSocketNotifier::Write, this);
  writer_->setEnabled(false);
  QObject::connect(reader_, &QSocketNotifier::activated, this, [this] { read_ready(); });
  QObject::connect(writer_, &QSocketNotifier::activated, this, [this] { send_queued(); });
}

TcpConn::~TcpConn() {
  if (fd_ >= 0) ::close(fd_);
}

QByteArray TcpConn::take_input() {
  QByteArray out;
  out.swap(input_);
  // Held at the cap: read again now that there is room.
  if (fd_ >= 0 && !peer_finished_ && !closing_ && reader_) reader_->setEnabled(true);
  return out;
}

void TcpConn::read_ready() {
  if (fd_ < 0) return;
  const int64_t room = read_cap_ - input_.size();
  if (room <= 0) {
    reader_->setEnabled(false);  // take_input() turns it on again
    return;
  }
  const qsizetype had = input_.size();
  input_.resize(had + std::min(room, kReadChunk));
  ssize_t n;
  do {
    n = ::recv(fd_, input_.data() + had, static_cast<size_t>(input_.size() - had), 0);
  } while (n < 0 && errno == EINTR);
  input_.resize(had + std::max<ssize_t>(n, 0));
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return finish();  // reset, or another error: the peer is gone
  }
  if (n == 0) {
    peer_finished_ = true;
    reader_->setEnabled(false);
  }
  if (on_readable) on_readable();
}

void TcpConn::write(QByteArray bytes) {
  if (fd_ < 0 || bytes.isEmpty()) return;
  unsent_ += bytes.size();
  queue_.push_back(std::move(bytes));
}

void TcpConn::flush() {
  if (fd_ >= 0 && unsent_ > 0 && !writer_->isEnabled()) send_queued();
}

void TcpConn::send_queued() {
  if (fd_ < 0 || queue_.empty()) return;
  iovec iov[kGather];
  size_t count = 0;
  for (auto it = queue_.begin(); it != queue_.end() && count < kGather; ++it, ++count) {
    const int64_t skip = count == 0 ? head_offset_ : 0;
    iov[count].iov_base = const_cast<char*>(it->constData()) + skip;
    iov[count].iov_len = static_cast<size_t>(it->size() - skip);
  }
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  ssize_t n;
  do {
    n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      writer_->setEnabled(true);  // the kernel's buffer is full: when it drains
      return;
    }
    return finish();  // EPIPE, ECONNRESET: the peer is gone
  }
  int64_t left = n;
  while (left > 0) {
    const int64_t rest = queue_.front().size() - head_offset_;
    if (left < rest) {
      head_offset_ += left;
      break;
    }
    left -= rest;
    head_offset_ = 0;
    queue_.pop_front();
  }
  unsent_ -= n;
  if (queue_.empty()) {
    if (writer_->isEnabled()) writer_->setEnabled(false);
  } else if (!writer_->isEnabled()) {
    writer_->setEnabled(true);  // the kernel took part: the rest when it drains
  }
  if (on_written) on_written(n);
  if (fd_ >= 0 && closing_ && unsent_ == 0) finish();
}

void TcpConn::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void TcpConn::close() {
  if (fd_ < 0) return;
  closing_ = true;
  reader_->setEnabled(false);
  if (unsent_ == 0) return finish();
  if (!writer_->isEnabled()) writer_->setEnabled(true);  // finishes once it is out
}

void TcpConn::abort() {
  queue_.clear();
  head_offset_ = 0;
  unsent_ = 0;
  finish();
}

void TcpConn::finish() {
  if (fd_ < 0) return;
  // Deleted later: this may run inside one of their own signals.
  for (QSocketNotifier* n : {reader_, writer_}) {
    n->setEnabled(false);
    n->deleteLater();
  }
  reader_ = writer_ = nullptr;
  ::close(fd_);
  fd_ = -1;
  queue_.clear();
  unsent_ = 0;
  if (on_closed) on_closed();
}

}  // namespace batchscope
