// AsyncEvents: a device's asynchronous events (ibv_get_async_event), for each of their readers.
//
// A device tells some things only here, never in a completion: a CQ overrun (the CQ is then
// unusable), a QP or SRQ that broke outside any work request, a port going down or up, a GID, LID
// or P_Key table change, a fatal device error. librdmacm opens each device once per process, so
// every endpoint on a device shares one event queue: whoever reads an event takes it from the
// others. AsyncEvents therefore reads on behalf of all its device's subscribers and gives each a
// copy of every event; each subscriber picks what concerns it (its QPs, CQ, SRQ, port).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "unet/verbs/device.h"

namespace unet::verbs {

// What an asynchronous event says, named.
enum class AsyncKind : std::uint8_t {
  kCqError,          // the CQ overran: it is unusable
  kQpFatal,          // the QP is in ERROR; its work requests flush
  kQpRequestError,   // idem, after an invalid request from the peer
  kQpAccessError,    // idem, after an access violation
  kQpLastWqe,        // an SRQ-attached QP in ERROR consumed its last receive
  kCommEstablished,  // a QP in RTR received its first packet
  kSrqError,         // the SRQ is broken: every QP on it
  kSrqLimit,         // the SRQ fell below its armed limit
  kPortActive,
  kPortError,  // the port left ACTIVE
  kLidChange,
  kPkeyChange,
  kGidChange,  // the GID table changed (RoCE: an address came or went)
  kSmChange,
  kClientReregister,
  kDeviceFatal,  // the device is unusable
  kOther,
};

// One event: its kind and the object it names (a QP number, a CQ or SRQ as the provider's
// object, a port number), the others zero.
struct AsyncEvent {
  AsyncKind kind = AsyncKind::kOther;
  std::uint32_t qp_num = 0;
  const void* cq = nullptr;
  const void* srq = nullptr;
  std::uint8_t port = 0;
};

// The named kind of a provider's event type. Pure.
AsyncKind to_async_kind(ibv_event_type type) noexcept;
// The event, its object read as its type says. Pure.
AsyncEvent to_async_event(const ibv_async_event& e) noexcept;

// One subscriber to a device's events (see the top of this file). Set-up throws; take() is a
// slow path: a lock and non-blocking reads of the device's event fd.
class AsyncEvents {
 public:
  // Subscribes to `ctx`'s events from now on (its event fd is made non-blocking).
  explicit AsyncEvents(std::shared_ptr<Context> ctx);
  ~AsyncEvents();
  AsyncEvents(const AsyncEvents&) = delete;
  AsyncEvents& operator=(const AsyncEvents&) = delete;

  // Reads every event the device has posted, gives a copy to each subscriber, and moves this
  // one's oldest into `out`. Returns how many it moved. Up to 1024 wait per subscriber (room
  // reserved at subscription: nothing allocates here); more are dropped and counted.
  std::size_t take(std::span<AsyncEvent> out) noexcept;
  std::uint64_t overflows() const noexcept { return overflows_.load(std::memory_order_relaxed); }
  // Readable when the device has events (poll/epoll it beside the completion channel).
  int fd() const noexcept;

 private:
  friend struct AsyncHub;
  std::shared_ptr<Context> ctx_;
  std::vector<AsyncEvent> mailbox_;  // guarded by the hub's lock
  std::atomic<std::uint64_t> overflows_{0};
};

}  // namespace unet::verbs
