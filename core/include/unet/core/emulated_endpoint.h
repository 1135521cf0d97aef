// EmulatedEndpoint, EndpointMux: many cheap endpoints multiplexed onto one real one — the
// paper's kernel-emulated endpoints, with the multiplexing done in user space.
//
// QPs, CQs and pinned memory are scarce; an EmulatedEndpoint has none of its own. It has its own
// receive queue and channels, and borrows the real endpoint's segment and send queue. An emulated
// channel is (a real channel, the peer's emulated endpoint id); every message carries the
// destination and source ids in its immediate data (dst << 16 | src). EndpointMux::poll() drives
// the real endpoint and hands each arrival to the emulated endpoint it names — if that endpoint
// has a channel for (real channel, source id). Anything else is dropped and counted: an emulated
// endpoint never sees another's messages.
//
// Threading: the mux, its real endpoint and all its emulated endpoints are used from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "unet/core/endpoint.h"

namespace unet::core {

// An emulated endpoint's id within its mux (travels in the immediate data).
using EmulatedId = std::uint16_t;

// Counters of one emulated endpoint.
struct EmulatedStats {
  std::uint64_t received = 0;
  std::uint64_t unknown_tag_drops = 0;  // arrivals from no channel of this endpoint
  std::uint64_t overflow_drops = 0;     // arrivals dropped because the receive queue was full
};

class EndpointMux;

// One emulated endpoint: its own channels and receive queue, the real endpoint's segment and
// send queue. Made by EndpointMux::create(); used on the mux's thread.
class EmulatedEndpoint {
 public:
  // This endpoint's id, and its counters.
  EmulatedId id() const noexcept { return id_; }
  const EmulatedStats& stats() const noexcept { return stats_; }

  // Set-up: a channel to emulated endpoint `remote` of the peer reached through real channel
  // `via`. Returns the emulated channel's id. Throws verbs::Error if `via` is not an open channel.
  ChannelId open_channel(ChannelId via, EmulatedId remote);

  // Data path, as Endpoint's: small messages inside the descriptor, larger ones from a buffer of
  // the real endpoint's segment (acquire_buffer / buffer / send; release what arrives).
  Status send_inline(ChannelId ch, std::span<const std::byte> payload) noexcept;
  Status acquire_buffer(BufferId& out) noexcept;
  std::span<std::byte> buffer(BufferId b) noexcept;
  Status send(ChannelId ch, BufferId b, std::uint32_t length) noexcept;
  // The oldest arrival; its `channel` is this endpoint's emulated channel id.
  Status receive(Descriptor& out) noexcept;
  Status release(BufferId b) noexcept;

 private:
  friend class EndpointMux;
  EmulatedEndpoint(EndpointMux& mux, EmulatedId id, std::uint32_t queue_depth)
      : mux_(&mux), id_(id), recv_(queue_depth) {}
  struct Channel {
    ChannelId via;
    EmulatedId remote;
  };
  std::uint32_t imm(const Channel& c) const noexcept { return std::uint32_t{c.remote} << 16 | id_; }

  EndpointMux* mux_;
  EmulatedId id_;
  std::vector<Channel> channels_;
  DescriptorRing<Descriptor> recv_;
  EmulatedStats stats_;
};

// Drives one real Endpoint and hands its arrivals to the emulated endpoints they name.
class EndpointMux {
 public:
  // Multiplexes emulated endpoints onto `real` (which must outlive the mux). Each emulated
  // endpoint's receive queue holds `queue_depth` descriptors.
  explicit EndpointMux(Endpoint& real, std::uint32_t queue_depth = 16);

  // Set-up: a new emulated endpoint (ids 0, 1, ...). Throws verbs::Error past 65536.
  EmulatedEndpoint& create();
  // The emulated endpoint `id` (which must exist).
  EmulatedEndpoint& at(EmulatedId id) noexcept { return *endpoints_[id]; }
  // Emulated endpoints created so far, and the real endpoint underneath.
  std::size_t size() const noexcept { return endpoints_.size(); }
  Endpoint& real() noexcept { return real_; }

  // Progress: polls the real endpoint and delivers its arrivals. Returns work done, or < 0.
  int poll() noexcept;

  // What the mux and its emulated endpoints cost, for comparing with one real endpoint each.
  struct Resources {
    std::size_t emulated_endpoints = 0;
    std::uint32_t queue_pairs = 0;    // of the one real endpoint
    std::size_t pinned_bytes = 0;     // the real endpoint's segment
    std::size_t emulation_bytes = 0;  // host memory of the emulated endpoints themselves
  };
  Resources resources() const noexcept;
  // Arrivals without ids or for an emulated endpoint that does not exist, dropped.
  std::uint64_t unknown_endpoint_drops() const noexcept { return unknown_endpoint_drops_; }

 private:
  void drop(const Descriptor& d) noexcept;

  Endpoint& real_;
  std::uint32_t queue_depth_;
  std::vector<std::unique_ptr<EmulatedEndpoint>> endpoints_;
  std::uint64_t unknown_endpoint_drops_ = 0;
};

}  // namespace unet::core
