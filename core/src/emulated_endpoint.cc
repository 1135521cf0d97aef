#include "unet/core/emulated_endpoint.h"

#include <cerrno>
#include <string>

#include "unet/verbs/error.h"

namespace unet::core {

ChannelId EmulatedEndpoint::open_channel(ChannelId via, EmulatedId remote) {
  if (mux_->real().channel_status(via) != Status::kOk)
    verbs::throw_error("EmulatedEndpoint::open_channel", "emulated endpoint " + std::to_string(id_),
                       EINVAL, "real channel " + std::to_string(via) + " is not open");
  channels_.push_back({via, remote});
  return static_cast<ChannelId>(channels_.size() - 1);
}

Status EmulatedEndpoint::send_inline(ChannelId ch, std::span<const std::byte> payload) noexcept {
  if (ch >= channels_.size()) return Status::kNotFound;
  return mux_->real().send_inline(channels_[ch].via, payload, imm(channels_[ch]));
}

Status EmulatedEndpoint::acquire_buffer(BufferId& out) noexcept {
  return mux_->real().acquire_buffer(out);
}

std::span<std::byte> EmulatedEndpoint::buffer(BufferId b) noexcept {
  return mux_->real().buffer(b);
}

Status EmulatedEndpoint::send(ChannelId ch, BufferId b, std::uint32_t length) noexcept {
  if (ch >= channels_.size()) return Status::kNotFound;
  return mux_->real().send(channels_[ch].via, b, length, imm(channels_[ch]));
}

Status EmulatedEndpoint::receive(Descriptor& out) noexcept {
  return recv_.pop_into(out) ? Status::kOk : Status::kNoResource;
}

Status EmulatedEndpoint::release(BufferId b) noexcept { return mux_->real().release(b); }

EndpointMux::EndpointMux(Endpoint& real, std::uint32_t queue_depth)
    : real_(real), queue_depth_(queue_depth) {}

EmulatedEndpoint& EndpointMux::create() {
  if (endpoints_.size() > UINT16_MAX)
    verbs::throw_error("EndpointMux::create", "endpoint mux", ENOSPC,
                       "65536 emulated endpoints at most");
  auto id = static_cast<EmulatedId>(endpoints_.size());
  endpoints_.push_back(
      std::unique_ptr<EmulatedEndpoint>(new EmulatedEndpoint(*this, id, queue_depth_)));
  return *endpoints_.back();
}

void EndpointMux::drop(const Descriptor& d) noexcept {
  if (!d.is_inline()) (void)real_.release(d.buffer);
}

int EndpointMux::poll() noexcept {
  int work = real_.poll();
  if (work < 0) return work;
  for (Descriptor d; real_.receive(d) == Status::kOk; ++work) {
    const auto dst = static_cast<EmulatedId>(d.imm >> 16);
    const auto src = static_cast<EmulatedId>(d.imm & 0xffff);
    if (!(d.flags & Descriptor::kImm) || dst >= endpoints_.size()) {
      ++unknown_endpoint_drops_;
      drop(d);
      continue;
    }
    EmulatedEndpoint& e = *endpoints_[dst];
    ChannelId ch = kNoChannel;
    for (ChannelId i = 0; i < e.channels_.size(); ++i)
      if (e.channels_[i].via == d.channel && e.channels_[i].remote == src) {
        ch = i;
        break;
      }
    if (ch == kNoChannel) {
      ++e.stats_.unknown_tag_drops;
      drop(d);
      continue;
    }
    d.channel = ch;
    if (!e.recv_.push(d)) {
      ++e.stats_.overflow_drops;
      drop(d);
      continue;
    }
    ++e.stats_.received;
  }
  return work;
}

EndpointMux::Resources EndpointMux::resources() const noexcept {
  Resources r;
  r.emulated_endpoints = endpoints_.size();
  r.queue_pairs = real_.queue_pairs();
  r.pinned_bytes = real_.segment_bytes();
  for (const auto& e : endpoints_)
    r.emulation_bytes += sizeof(EmulatedEndpoint) + e->recv_.capacity() * sizeof(Descriptor) +
                         e->channels_.capacity() * sizeof(EmulatedEndpoint::Channel);
  return r;
}

}  // namespace unet::core
