// Endpoint: the device's asynchronous events (verbs/async_events.h), read by service_channels().
// What each means for this endpoint is decided in device_event.h.
#include <array>

#include "device_event.h"
#include "endpoint_impl.h"

namespace unet::core {

void Endpoint::service_device() noexcept {
  DeviceFacts f;
  f.ud = ud_;
  f.ud_qpn = ud_ ? v_->ud_qp->qp_num() : 0;
  f.cq = v_->cq->native();
  f.srq = v_->srq ? static_cast<const void*>(v_->srq->native()) : nullptr;
  f.port = config_.port;
  std::array<verbs::AsyncEvent, 32> batch;
  for (std::size_t n; (n = v_->events->take(batch)) != 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      const verbs::AsyncEvent& e = batch[i];
      ++stats_.device_events;
      switch (action_for(e, f)) {
        case DeviceAction::kNone:
          break;
        case DeviceAction::kFailChannel: {
          const ChannelId ch = v_->tags.find(e.qp_num);
          if (ch == kNoChannel || channels_[ch]->state != Channel::State::kOpen) break;
          ++stats_.qp_errors;
          last_rc_qpn_ = 0;
          abort_lane(*lanes_[channels_[ch]->lane], Status::kDeviceError);
          break;
        }
        case DeviceAction::kRecoverUd:
          ++stats_.qp_errors;
          if (!lanes_[0]->failed) abort_lane(*lanes_[0], Status::kDeviceError);  // poll() recovers
          break;
        case DeviceAction::kFailEndpoint:
          device_failed_ = true;
          [[fallthrough]];
        case DeviceAction::kFailRcChannels:  // every lane (UD: its one) fails
          for (auto& lane : lanes_)
            if (!lane->failed) abort_lane(*lane, Status::kDeviceError);
          break;
        case DeviceAction::kPortDown:
          ++stats_.port_errors;
          port_active_ = false;
          break;
        case DeviceAction::kPortUp:
          port_active_ = true;
          break;
        case DeviceAction::kCheckGid: {
          ++stats_.gid_changes;
          try {
            gid_current_ =
                verbs::select_gid(*v_->ctx, config_.port, v_->gid.index).gid == v_->gid.gid;
          } catch (...) {
            gid_current_ = false;  // the entry is gone or zero
          }
          break;
        }
      }
    }
  }
}

}  // namespace unet::core
