// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// RingQueue<T>: a FIFO on one growable ring buffer, for the engine's
// admission queue. Unlike std::deque, which allocates a block every few
// hundred bytes pushed and frees it once popped (here on another thread),
// it allocates only to grow, so pushing and popping at a steady depth costs
// no allocation. Elements are reached by position (0 is the front) for
// binary search; erase(i) closes the gap by moving the later ones forward.
// When it empties with more than kKeep slots it gives its storage back, so a
// burst does not hold memory for good.
//
// T must be nothrow move-constructible and move-assignable.
// Thread-safety: none; the engine guards it with its lock.

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace batchscope {

template <class T>
class RingQueue {
  static_assert(std::is_nothrow_move_constructible_v<T>);

 public:
  static constexpr size_t kKeep = 1024;  // slots kept once empty

  RingQueue() = default;
  RingQueue(const RingQueue&) = delete;
  RingQueue& operator=(const RingQueue&) = delete;
  ~RingQueue() {
    clear();
    release();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }

  T& operator[](size_t i) { return data_[(head_ + i) & (cap_ - 1)]; }
  const T& operator[](size_t i) const { return data_[(head_ + i) & (cap_ - 1)]; }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(T&& v) {
    if (size_ == cap_) grow();
    ::new (static_cast<void*>(&data_[(head_ + size_) & (cap_ - 1)])) T(std::move(v));
    ++size_;
  }

  template <class... A>
  void emplace_back(A&&... a) {
    if (size_ == cap_) grow();
    void* at = &data_[(head_ + size_) & (cap_ - 1)];
    if constexpr (std::is_aggregate_v<T>) {
      ::new (at) T{std::forward<A>(a)...};  // Clang 14 lacks C++20's T(...) for aggregates
    } else {
      ::new (at) T(std::forward<A>(a)...);
    }
    ++size_;
  }

  void pop_front() {
    data_[head_].~T();
    head_ = (head_ + 1) & (cap_ - 1);
    if (--size_ == 0) emptied();
  }

  void erase(size_t i) {
    for (size_t k = i; k + 1 < size_; ++k) (*this)[k] = std::move((*this)[k + 1]);
    back().~T();
    if (--size_ == 0) emptied();
  }

  void clear() {
    while (size_ > 0) pop_front();
  }

  // Exchanges contents and storage in O(1): a consumer takes a whole queue
  // at once and hands over an empty one.
  void swap(RingQueue& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(cap_, o.cap_);
    std::swap(head_, o.head_);
    std::swap(size_, o.size_);
  }

 private:
  void grow() {
    const size_t cap = cap_ ? 2 * cap_ : 16;
    T* data = std::allocator<T>().allocate(cap);
    for (size_t i = 0; i < size_; ++i) {
      T& from = (*this)[i];
      ::new (static_cast<void*>(&data[i])) T(std::move(from));
      from.~T();
    }
    release();
    data_ = data;
    cap_ = cap;
    head_ = 0;
  }
  void emptied() {
    head_ = 0;
    if (cap_ > kKeep) release();
  }
  void release() {
    if (data_) std::allocator<T>().deallocate(data_, cap_);
    data_ = nullptr;
    cap_ = 0;
    head_ = 0;
  }

  T* data_ = nullptr;
  size_t cap_ = 0;  // 0 or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace batchscope
