// What the resource-exhaustion tests (resource_exhaustion_test.cc, resource_limits_test.cc)
// share: numbered messages of 100..999 bytes with a checked pattern, sent from segment buffers and
// checked on arrival, bounded polling of several endpoints, and the device's sysfs name and port
// counters.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "endpoint_support.h"
#include "kernel_files.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/device.h"

namespace unet::test::exhaustion {

using core::BufferId;
using core::ChannelId;
using core::Descriptor;
using core::Endpoint;
using core::EndpointConfig;
using core::Transport;

inline std::byte pattern(std::uint32_t msg, std::uint32_t i) {
  return static_cast<std::byte>(msg * 131 + i * 7 + 1);
}

// Message m's length: 120 .. 999 bytes, so every arrival holds a buffer (above the 108-byte
// descriptor payload) and some are posted inline by the sender, some not.
inline std::uint32_t length_of(std::uint32_t m) { return 120 + (m * 97) % 880; }

// Polls `eps` until `done()` holds or `timeout` passes; false on a timeout or a device error.
inline bool pump(std::initializer_list<Endpoint*> eps, const std::function<bool()>& done,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (Endpoint* e : eps)
      if (e->poll() < 0) return false;
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// Polls `eps` for `span` whatever happens (time for an exhausted resource to come back by
// itself, which it must not); false on a device error.
inline bool pump_for(std::initializer_list<Endpoint*> eps, std::chrono::milliseconds span) {
  const auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end)
    for (Endpoint* e : eps)
      if (e->poll() < 0) return false;
  return true;
}

// Pushes message m (length_of(m) bytes of pattern(m)) from a segment buffer; kNoResource, with
// nothing taken, when the send queue is full or no buffer is spare (poll `src` and retry).
inline Status push_message(Endpoint& src, ChannelId ch, std::uint32_t m) {
  BufferId b = core::kNoBuffer;
  if (src.send_queue_space() == 0) return Status::kNoResource;
  if (Status s = src.acquire_buffer(b); s != Status::kOk) return s;
  auto bytes = src.buffer(b);
  const std::uint32_t len = length_of(m);
  for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(m, i);
  return src.send(ch, b, len);
}

// Sends messages [first, first+n) from src, polling `eps` on back-pressure; false on a timeout or
// another status.
inline bool send_messages(Endpoint& src, ChannelId ch, std::uint32_t first, std::uint32_t n,
                          std::initializer_list<Endpoint*> eps) {
  for (std::uint32_t m = first; m < first + n; ++m) {
    Status s = Status::kNoResource;
    if (!pump(eps, [&] { return (s = push_message(src, ch, m)) != Status::kNoResource; }))
      return false;
    if (s != Status::kOk) return false;
  }
  return true;
}

// Takes the next arrival of dst (polling `eps`), checks it is message m on channel ch, and
// releases its buffer unless `hold` keeps it. Empty on success, else what was wrong.
inline std::string expect_message(Endpoint& dst, ChannelId ch, std::uint32_t m,
                                  std::initializer_list<Endpoint*> eps,
                                  std::vector<BufferId>* hold = nullptr) {
  Descriptor d;
  if (!pump(eps, [&] { return dst.receive(d) == Status::kOk; }))
    return "message " + std::to_string(m) + " never arrived";
  const std::uint32_t len = length_of(m);
  if (d.channel != ch)
    return "message " + std::to_string(m) + " on channel " + std::to_string(d.channel);
  if (d.length != len)
    return "message " + std::to_string(m) + " is " + std::to_string(d.length) + " bytes, not " +
           std::to_string(len);
  const std::byte* p = d.is_inline() ? d.data : dst.buffer(d.buffer).data();
  for (std::uint32_t i = 0; i < len; ++i)
    if (p[i] != pattern(m, i))
      return "message " + std::to_string(m) + " byte " + std::to_string(i) + " differs";
  if (!d.is_inline()) {
    if (hold)
      hold->push_back(d.buffer);
    else if (dst.release(d.buffer) != Status::kOk)
      return "release refused";
  }
  return {};
}

// The name the device goes by ("rxe0"), for its sysfs counters and its cgroup limits.
inline std::string device_sysfs_name() { return verbs::Context::open(device_name())->name(); }

// A port counter of the device (/sys/class/infiniband/<dev>/ports/1/hw_counters/<name>); -1 if
// the device has none.
inline long hw_counter(const std::string& dev, const char* name) {
  return read_long("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" + name);
}

}  // namespace unet::test::exhaustion
