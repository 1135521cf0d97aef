// Channels for any layer's endpoint in tests: between two endpoints of one layer, and to a
// RawPeer. core::Endpoint and uam::Endpoint open channels with offer_channel() / accept_offer(),
// ulp's DatagramEndpoint and StreamEndpoint with offer_peer() / accept_peer(); these helpers take
// either, so a test written once runs against every layer.
#pragma once

#include <chrono>
#include <string_view>
#include <type_traits>
#include <utility>

#include "device_env.h"
#include "raw_peer.h"
#include "unet/core/endpoint.h"

namespace unet::test {

template <class E>
core::ChannelOffer offer(E& e) {
  if constexpr (requires { e.offer_peer(); })
    return e.offer_peer();
  else
    return e.offer_channel();
}

template <class E>
core::ChannelId accept(E& e, const core::ChannelOffer& o, std::string_view peer_half) {
  if constexpr (requires { e.accept_peer(o, peer_half); })
    return e.accept_peer(o, peer_half);
  else
    return e.accept_offer(o, peer_half);
}

// The core endpoint under a layer's endpoint (or the core endpoint itself).
template <class E>
core::Endpoint& net_of(E& e) {
  if constexpr (std::is_same_v<E, core::Endpoint>)
    return e;
  else
    return e.net();
}

// A channel between `a` and `b`: (a's id, b's id).
template <class E>
std::pair<core::ChannelId, core::ChannelId> join(E& a, E& b) {
  const core::ChannelOffer oa = offer(a), ob = offer(b);
  return {accept(a, oa, ob.local), accept(b, ob, oa.local)};
}

// A channel of `e` to `raw`, connected both ways; returns e's id for it.
template <class E>
core::ChannelId join_raw(E& e, RawPeer& raw) {
  const core::ChannelOffer o = offer(e);
  const core::ChannelId ch = accept(e, o, raw.line());
  raw.connect(o.local);
  return ch;
}

// A layer endpoint (built from `args`) with a channel `ch` to a raw QP of the endpoint's transport.
template <class E>
struct RawChannel {
  E ep;
  RawPeer raw;
  core::ChannelId ch;
  template <class... Args>
  explicit RawChannel(const core::EndpointConfig& net, Args&&... args)
      : ep(net, std::forward<Args>(args)...),
        raw(device_name(),
            net.transport == core::Transport::kRc ? verbs::QpType::kRc : verbs::QpType::kUd),
        ch(join_raw(ep, raw)) {}
  // Polls the endpoint, draining what the raw peer receives, until `done`, for at most 10 s.
  template <class Done>
  bool pump(Done&& done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (ep.poll() < 0 || std::chrono::steady_clock::now() > end) return false;
      (void)raw.drain();
    }
    return true;
  }
};

}  // namespace unet::test
