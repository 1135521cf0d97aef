// Device events: what an endpoint does about one of its device's asynchronous events. Pure logic.
//
// The device's event queue is shared by every endpoint on it (verbs/async_events.h), so each
// endpoint first decides whether an event is about it: its CQ, its SRQ (RC), its UD QP, the QP of
// one of its RC channels, or its port; a device-wide fatal error is about everyone.
#pragma once

#include <cstdint>

#include "unet/verbs/async_events.h"

namespace unet::core {

enum class DeviceAction : std::uint8_t {
  kNone,            // not ours, or nothing to do
  kFailChannel,     // the RC channel whose QP is event.qp_num fails (if it is one of ours)
  kRecoverUd,       // our UD QP is in ERROR: recover it as after a failed send
  kFailRcChannels,  // our SRQ broke: every RC channel fails
  kFailEndpoint,    // our CQ or the device is unusable: everything fails, poll() returns -1
  kPortDown,
  kPortUp,
  kCheckGid,  // our port's GID table changed: is our GID still there?
};

// What this endpoint knows about itself.
struct DeviceFacts {
  bool ud = false;
  std::uint32_t ud_qpn = 0;
  const void* cq = nullptr;
  const void* srq = nullptr;  // RC
  std::uint8_t port = 1;
};

constexpr DeviceAction action_for(const verbs::AsyncEvent& e, const DeviceFacts& f) noexcept {
  using K = verbs::AsyncKind;
  switch (e.kind) {
    case K::kCqError:
      return e.cq == f.cq ? DeviceAction::kFailEndpoint : DeviceAction::kNone;
    case K::kDeviceFatal:
      return DeviceAction::kFailEndpoint;
    case K::kQpFatal:
    case K::kQpRequestError:
    case K::kQpAccessError:
      if (f.ud) return e.qp_num == f.ud_qpn ? DeviceAction::kRecoverUd : DeviceAction::kNone;
      return DeviceAction::kFailChannel;
    case K::kSrqError:
      return !f.ud && e.srq == f.srq ? DeviceAction::kFailRcChannels : DeviceAction::kNone;
    case K::kPortError:
      return e.port == f.port ? DeviceAction::kPortDown : DeviceAction::kNone;
    case K::kPortActive:
      return e.port == f.port ? DeviceAction::kPortUp : DeviceAction::kNone;
    case K::kGidChange:
      return e.port == f.port ? DeviceAction::kCheckGid : DeviceAction::kNone;
    default:
      return DeviceAction::kNone;
  }
}

}  // namespace unet::core
