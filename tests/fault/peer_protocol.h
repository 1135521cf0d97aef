// What tests/fault/peer_death_test.cc and its peer process (fault_peer.cc) agree on: handler ids,
// the stream port, the size of the window the core peer grants, and the endpoint configurations.
#pragma once

#include <chrono>
#include <cstddef>

#include "endpoint_support.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {

inline constexpr uam::HandlerId kEcho = 1, kEchoReply = 2;
inline constexpr std::uint16_t kStreamPort = 7;
inline constexpr std::size_t kWindowBytes = 1 << 20;

// A dead peer is declared after one second of silence.
inline ulp::StreamConfig stream_peer_config() {
  ulp::StreamConfig s;
  s.send_buffer = 64 * 1024;
  s.recv_buffer = 64 * 1024;
  s.dead_peer_timeout = std::chrono::milliseconds(1000);
  return s;
}

}  // namespace unet::test
