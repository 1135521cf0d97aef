// DatagramEndpoint on a real device (label device): datagrams of 0 B to 64 KiB across ports,
// fragmented and reassembled; unbound ports, full queues and bad input counted or refused.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "device_env.h"
#include "endpoint_support.h"
#include "unet/ulp/datagram_endpoint.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((seed * 131 + i * 7 + (i >> 8)) & 0xFF);
  return v;
}

struct Pair {
  DatagramEndpoint a, b;
  ChannelId ab = 0, ba = 0;
  explicit Pair(const core::EndpointConfig& ca = test::ud_config(),
                const core::EndpointConfig& cb = test::ud_config())
      : a(ca), b(cb) {
    core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
    ab = a.accept_peer(oa, ob.local);
    ba = b.accept_peer(ob, oa.local);
  }
  // Sends, retrying while the send path is full.
  Status send(std::uint16_t from, std::uint16_t to, std::span<const std::byte> data) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    Status s;
    while ((s = a.send_to(from, ab, to, data)) == Status::kNoResource &&
           std::chrono::steady_clock::now() < end)
      if (a.poll() < 0 || b.poll() < 0) return Status::kDeviceError;
    return s;
  }
  // Receives one datagram on b's `port`, polling both.
  Status receive(std::uint16_t port, std::vector<std::byte>& out, DatagramInfo& info) {
    out.resize(kMaxDatagram);
    const auto end = std::chrono::steady_clock::now() + 10s;
    Status s;
    while ((s = b.recv_from(port, out, info)) == Status::kNoResource &&
           std::chrono::steady_clock::now() < end)
      if (a.poll() < 0 || b.poll() < 0) return Status::kDeviceError;
    if (s == Status::kOk) out.resize(info.length);
    return s;
  }
};

TEST(Datagram, SizesFromZeroTo64KiBArriveWhole) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  ASSERT_EQ(p.a.bind(1000), Status::kOk);
  ASSERT_EQ(p.b.bind(2000), Status::kOk);
  const std::uint32_t st = p.a.stride();
  ASSERT_GE(st, 256u);
  const std::size_t sizes[] = {
      0, 1, 24, 25, 100, st - 1, st, st + 1, 3 * st + 5, 20000, kMaxDatagram - 1, kMaxDatagram};
  std::uint32_t seed = 0;
  for (std::size_t n : sizes) {
    SCOPED_TRACE(n);
    const auto data = pattern(n, ++seed);
    ASSERT_EQ(p.send(1000, 2000, data), Status::kOk);
    std::vector<std::byte> got;
    DatagramInfo info;
    ASSERT_EQ(p.receive(2000, got, info), Status::kOk);
    EXPECT_EQ(info.peer, p.ba);
    EXPECT_EQ(info.src_port, 1000);
    EXPECT_EQ(got, data);
  }
  EXPECT_EQ(p.b.stats().received, std::size(sizes));
  EXPECT_EQ(p.b.reassembly_stats().completed, 5u);  // the sizes over one stride
  EXPECT_EQ(p.a.stats().sent, std::size(sizes));
}

TEST(Datagram, ManyMixedDatagramsAcrossTwoPortsInOrderAndIntact) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  ASSERT_EQ(p.a.bind(1), Status::kOk);
  ASSERT_EQ(p.b.bind(10), Status::kOk);
  ASSERT_EQ(p.b.bind(11), Status::kOk);
  constexpr std::uint32_t kCount = 400;
  std::uint32_t got[2] = {}, bad = 0;
  std::vector<std::byte> buf(kMaxDatagram);
  std::uint32_t sent = 0;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (got[0] + got[1] < kCount && std::chrono::steady_clock::now() < end) {
    if (sent < kCount) {
      const auto data = pattern((sent * 2654435761u) % 9000, sent);
      const Status s = p.a.send_to(1, p.ab, static_cast<std::uint16_t>(10 + sent % 2), data);
      if (s == Status::kOk)
        ++sent;
      else
        ASSERT_EQ(s, Status::kNoResource);
    }
    ASSERT_GE(p.a.poll(), 0);
    ASSERT_GE(p.b.poll(), 0);
    for (std::uint16_t port : {10, 11}) {
      DatagramInfo info;
      while (p.b.recv_from(port, buf, info) == Status::kOk) {
        // On one lossless path the datagrams of a port arrive in order: the k-th is number 2k +
        // port.
        const std::uint32_t n = got[port - 10] * 2 + (port - 10);
        ++got[port - 10];
        const auto want = pattern((n * 2654435761u) % 9000, n);
        if (info.length != want.size() || !std::equal(want.begin(), want.end(), buf.begin())) ++bad;
      }
    }
  }
  EXPECT_EQ(got[0], kCount / 2);
  EXPECT_EQ(got[1], kCount / 2);
  EXPECT_EQ(bad, 0u);
}

TEST(Datagram, UnboundPortsAndFullQueuesAreCountedDrops) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  ASSERT_EQ(p.a.bind(1), Status::kOk);
  ASSERT_EQ(p.b.bind(5), Status::kOk);
  const auto small = pattern(10, 1), big = pattern(5000, 2);
  ASSERT_EQ(p.send(1, 6, small), Status::kOk);  // nobody bound 6
  ASSERT_EQ(p.send(1, 6, big), Status::kOk);
  for (std::uint32_t i = 0; i < 70; ++i)
    ASSERT_EQ(p.send(1, 5, small), Status::kOk);  // queue holds 64
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (p.b.stats().delivered + p.b.stats().queue_full_drops < 70 &&
         std::chrono::steady_clock::now() < end) {
    ASSERT_GE(p.a.poll(), 0);
    ASSERT_GE(p.b.poll(), 0);
  }
  EXPECT_EQ(p.b.stats().unbound_drops, 1 + fragment_count(5000, p.a.stride()));  // every fragment
  EXPECT_EQ(p.b.stats().delivered, 64u);
  EXPECT_EQ(p.b.stats().queue_full_drops, 6u);
  std::vector<std::byte> out(100);
  DatagramInfo info;
  std::uint32_t n = 0;
  while (p.b.recv_from(5, out, info) == Status::kOk) ++n;
  EXPECT_EQ(n, 64u);
}

TEST(Datagram, BadInputIsRefusedAndChangesNothing) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  ASSERT_EQ(p.a.bind(1), Status::kOk);
  EXPECT_EQ(p.a.bind(1), Status::kInvalidState);
  ASSERT_EQ(p.b.bind(2), Status::kOk);
  std::vector<std::byte> huge(kMaxDatagram + 1);
  EXPECT_EQ(p.a.send_to(1, p.ab, 2, huge), Status::kInvalidArgument);
  EXPECT_EQ(p.a.send_to(3, p.ab, 2, std::span(huge).first(10)),
            Status::kNotFound);  // unbound source
  EXPECT_EQ(p.a.send_to(1, p.ab + 5, 2, std::span(huge).first(10)), Status::kNotFound);
  EXPECT_EQ(p.a.stats().sent, 0u);
  // Too small a buffer: refused, the datagram stays for a larger one.
  const auto data = pattern(3000, 9);
  ASSERT_EQ(p.send(1, 2, data), Status::kOk);
  std::vector<std::byte> got;
  DatagramInfo info;
  ASSERT_EQ(p.b.wait(2, 5s), Status::kOk);
  std::vector<std::byte> tiny(100);
  EXPECT_EQ(p.b.recv_from(2, tiny, info), Status::kInvalidArgument);
  EXPECT_EQ(info.length, 3000u);
  ASSERT_EQ(p.receive(2, got, info), Status::kOk);
  EXPECT_EQ(got, data);
  EXPECT_EQ(p.b.recv_from(9, tiny, info), Status::kNotFound);
  EXPECT_EQ(p.b.wait(2, 20ms), Status::kTimeout);
  EXPECT_EQ(p.b.unbind(2), Status::kOk);
  EXPECT_EQ(p.b.unbind(2), Status::kNotFound);
  EXPECT_THROW(DatagramEndpoint(test::endpoint_config(core::Transport::kRc)),
               std::invalid_argument);
}

// A peer with smaller buffers than our path MTU gets fragments it can take: the stride to it
// comes from its offer, a 64 KiB datagram arrives whole in that many fragments, and nothing
// fails at its receive queue (each fragment states its stride, so b needs nothing).
TEST(Datagram, FragmentsToAPeerFitItsBuffers) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig small = test::ud_config();
  small.buffer_bytes = 768;
  Pair p(test::ud_config(), small);
  ASSERT_GT(p.a.stride(), 768u) << "needs a path MTU above 768 bytes";
  const std::uint32_t st = 768 - static_cast<std::uint32_t>(kDatagramHeaderBytes);
  EXPECT_EQ(p.a.stride(p.ab), st);
  EXPECT_EQ(p.b.stride(p.ba), st);
  EXPECT_EQ(p.a.stride(p.ab + 7), 0u) << "no such peer";
  ASSERT_EQ(p.a.bind(1000), Status::kOk);
  ASSERT_EQ(p.b.bind(2000), Status::kOk);
  std::uint32_t seed = 0;
  std::uint64_t fragments = 0;
  for (std::size_t n :
       {std::size_t{st}, std::size_t{st} + 1, std::size_t{20000}, std::size_t{kMaxDatagram}}) {
    SCOPED_TRACE(n);
    const auto data = pattern(n, ++seed);
    ASSERT_EQ(p.send(1000, 2000, data), Status::kOk);
    fragments += fragment_count(static_cast<std::uint32_t>(n), st);
    std::vector<std::byte> got;
    DatagramInfo info;
    ASSERT_EQ(p.receive(2000, got, info), Status::kOk);
    EXPECT_EQ(got, data);
  }
  EXPECT_EQ(p.a.stats().fragments_sent, fragments);
  EXPECT_EQ(p.b.stats().fragments_received, fragments);
  EXPECT_EQ(p.b.net().stats().recv_errors, 0u);
}

// A peer whose buffers leave fragments below kMinStride, or so small that a 64 KiB datagram
// would not fit our send path, is refused at accept_peer with the channel closed.
TEST(Datagram, APeerWithBuffersTooSmallIsRefused) {
  UNET_REQUIRE_DEVICE();
  for (const std::uint32_t bytes : {64u, 256u}) {
    SCOPED_TRACE(bytes);
    DatagramEndpoint a(test::ud_config());
    core::EndpointConfig tiny = test::ud_config();
    tiny.buffer_bytes = bytes;
    core::Endpoint peer(tiny);
    const core::ChannelOffer oa = a.offer_peer();
    EXPECT_THROW((void)a.accept_peer(oa, peer.offer_channel().local), std::length_error);
    EXPECT_EQ(a.net().channel_status(oa.slot), Status::kClosed);
    EXPECT_EQ(a.stride(oa.slot), 0u);
  }
}

}  // namespace
}  // namespace unet::ulp
