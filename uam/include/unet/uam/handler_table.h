// HandlerTable<Fn>: an endpoint's active-message handlers, ids 0..255 (the wire's handler byte).
//
// One id space; each registered id is either a request handler or a reply handler, and a lookup
// names the kind it needs (a request runs request handlers, a reply or store-done runs reply
// handlers), so a message naming a handler of the other kind never runs it. Rules: registration
// refuses a taken id (kInvalidState) and an empty handler (kInvalidArgument), changing nothing;
// a lookup of an unregistered id answers kNotFound — "unknown handler": the caller counts it and
// answers the request with an error reply — and one of the wrong kind kInvalidArgument. Lookup
// hands out a pointer into the table (no copy of Fn), so it never allocates; the table is a fixed
// array of 256 entries. Registration is set-up, but it answers with a Status, not an exception:
// a taken id is an expected answer, not a failure of the system.
//
// Fn is the handler's type (a function pointer, or any copyable callable that tests false when
// empty); the active-message layer fixes it, tests use their own.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "unet/status.h"

namespace unet::uam {

// Which messages may run a handler: requests (and stores) or replies (and gets).
enum class HandlerKind : std::uint8_t { kRequest, kReply };

// A handler's id, the wire's handler byte.
using HandlerId = std::uint8_t;

// What a handler type must be: copyable, default-constructible, and testable for emptiness
// (std::function is).
template <class F>
concept HandlerFunction = std::copyable<F> && std::default_initializable<F> &&
    requires(const F& f) {
  static_cast<bool>(f);
};

// The table itself: 256 entries, fixed.
template <HandlerFunction Fn>
class HandlerTable {
 public:
  static constexpr std::size_t kSize = 256;

  // Registers `fn` at `id` as a handler of `kind`.
  [[nodiscard]] Status add(HandlerId id, HandlerKind kind, Fn fn) {
    if (!static_cast<bool>(fn)) return Status::kInvalidArgument;
    Entry& e = entries_[id];
    if (e.used) return Status::kInvalidState;
    e.fn = std::move(fn);
    e.kind = kind;
    e.used = true;
    ++size_;
    return Status::kOk;
  }

  // Unregisters `id`; kNotFound when nothing is registered there.
  [[nodiscard]] Status remove(HandlerId id) {
    Entry& e = entries_[id];
    if (!e.used) return Status::kNotFound;
    e = Entry{};
    --size_;
    return Status::kOk;
  }

  // Finds the handler of `kind` at `id`: kOk and `out` pointing at it (valid until that id is
  // removed); kNotFound for an unknown id; kInvalidArgument for a handler of the other kind.
  // `out` is untouched on failure.
  [[nodiscard]] Status lookup(HandlerId id, HandlerKind kind, const Fn*& out) const noexcept {
    const Entry& e = entries_[id];
    if (!e.used) return Status::kNotFound;
    if (e.kind != kind) return Status::kInvalidArgument;
    out = &e.fn;
    return Status::kOk;
  }

  // Whether `id` is registered, and how many ids are.
  bool contains(HandlerId id) const noexcept { return entries_[id].used; }
  std::size_t size() const noexcept { return size_; }

 private:
  struct Entry {
    Fn fn{};
    HandlerKind kind = HandlerKind::kRequest;
    bool used = false;
  };
  std::array<Entry, kSize> entries_{};
  std::size_t size_ = 0;
};

}  // namespace unet::uam
