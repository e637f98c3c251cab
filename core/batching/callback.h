// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Callback<void(Args...)>: a move-only callable, like C++23's
// std::move_only_function, holding callables of up to kInline bytes in place
// (no heap allocation), larger ones on the heap. The engine keeps one per
// queued request, so a callback that captures a std::promise, a pointer or
// a few values costs no allocation. Unlike std::function it accepts
// move-only callables (a lambda that owns a std::promise) and is not
// copyable.
//
// Thread-safety: none of its own; like any value, one thread at a time.

#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace batchscope {

template <class Sig>
class Callback;

template <class R, class... Args>
class Callback<R(Args...)> {
 public:
  static constexpr size_t kInline = 48;

  Callback() noexcept = default;
  Callback(std::nullptr_t) noexcept {}  // NOLINT: as std::function
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, Callback> &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  Callback(F&& f) {  // NOLINT: implicit, as std::function
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> ||
                  requires(const D& d) { d == nullptr; }) {
      if (f == nullptr) return;  // an empty std::function or null pointer: empty
    }
    if constexpr (fits<D>) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(buf_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }
  Callback(Callback&& o) noexcept { take(o); }
  Callback& operator=(Callback&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Callback& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  // Calling an empty Callback throws std::bad_function_call, as std::function.
  R operator()(Args... args) {
    if (!ops_) throw std::bad_function_call();
    return ops_->call(buf_, std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    R (*call)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;  // to is raw storage; from is left destroyed
    void (*destroy)(void*) noexcept;
  };

  template <class D>
  static constexpr bool fits =
      sizeof(D) <= kInline &&
      alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static D* as(void* p) noexcept {
    return std::launder(static_cast<D*>(p));
  }

  template <class D>
  static constexpr Ops kInlineOps{
      [](void* p, Args&&... a) -> R { return std::invoke(*as<D>(p), std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept {
        ::new (to) D(std::move(*as<D>(from)));
        as<D>(from)->~D();
      },
      [](void* p) noexcept { as<D>(p)->~D(); }};

  template <class D>
  static constexpr Ops kHeapOps{
      [](void* p, Args&&... a) -> R { return std::invoke(**as<D*>(p), std::forward<Args>(a)...); },
      [](void* from, void* to) noexcept { ::new (to) D*(*as<D*>(from)); },
      [](void* p) noexcept { delete *as<D*>(p); }};

  void take(Callback& o) noexcept {
    if (o.ops_) {
      o.ops_->move(o.buf_, buf_);
      ops_ = std::exchange(o.ops_, nullptr);
    }
  }
  void reset() noexcept {
    if (const Ops* ops = std::exchange(ops_, nullptr)) ops->destroy(buf_);
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace batchscope
