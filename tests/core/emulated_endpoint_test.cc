// Device: 1000 emulated endpoints on each of two real endpoints (one RC channel between them)
// exchange messages with no cross-delivery; strangers' messages are dropped and counted; the
// resources used are reported.
#include "unet/core/emulated_endpoint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "endpoint_support.h"
#include "unet/verbs/error.h"

namespace unet::core {
namespace {

using namespace std::chrono_literals;

EndpointConfig config() {
  EndpointConfig c = test::endpoint_config(Transport::kRc, 256);
  c.free_queue_depth = 192;  // 2000 small messages arrive in bursts
  c.send_queue_depth = 128;
  return c;
}

class Emulated : public ::testing::Test {
 protected:
  void SetUp() override {
    UNET_REQUIRE_DEVICE();
    a_ = std::make_unique<Endpoint>(config());
    b_ = std::make_unique<Endpoint>(config());
    std::tie(ab_, ba_) = test::connect_endpoints(*a_, *b_);
    ma_ = std::make_unique<EndpointMux>(*a_);
    mb_ = std::make_unique<EndpointMux>(*b_);
  }
  // Sends `value` from emulated endpoint `e` on `ch`, driving both muxes through back-pressure.
  void send(EmulatedEndpoint& e, ChannelId ch, std::uint32_t value) {
    std::byte msg[4];
    std::memcpy(msg, &value, 4);
    auto deadline = std::chrono::steady_clock::now() + 10s;
    Status s;
    while ((s = e.send_inline(ch, msg)) == Status::kNoResource &&
           std::chrono::steady_clock::now() < deadline) {
      (void)ma_->poll();
      (void)mb_->poll();
    }
    ASSERT_EQ(s, Status::kOk);
  }
  void pump(std::chrono::milliseconds d) {
    auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      (void)ma_->poll();
      (void)mb_->poll();
    }
  }
  std::unique_ptr<Endpoint> a_, b_;
  ChannelId ab_ = kNoChannel, ba_ = kNoChannel;
  std::unique_ptr<EndpointMux> ma_, mb_;
};

TEST_F(Emulated, ThousandEndpointsEachGetOnlyTheirOwnMessages) {
  constexpr std::uint32_t kN = 1000;
  std::vector<ChannelId> a_ch(kN), b_ch(kN);
  for (std::uint32_t i = 0; i < kN; ++i) {
    EmulatedEndpoint& ea = ma_->create();
    EmulatedEndpoint& eb = mb_->create();
    ASSERT_EQ(ea.id(), i);
    a_ch[i] = ea.open_channel(ab_, eb.id());
    b_ch[i] = eb.open_channel(ba_, ea.id());
  }
  // Every A-endpoint i sends i (and 1000 + i) to B-endpoint i.
  for (std::uint32_t round = 0; round < 2; ++round)
    for (std::uint32_t i = 0; i < kN; ++i)
      send(ma_->at(static_cast<EmulatedId>(i)), a_ch[i], round * kN + i);
  std::uint32_t delivered = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  std::vector<int> got(kN, 0);
  while (delivered < 2 * kN && std::chrono::steady_clock::now() < deadline) {
    (void)ma_->poll();
    (void)mb_->poll();
    for (std::uint32_t i = 0; i < kN; ++i) {
      EmulatedEndpoint& eb = mb_->at(static_cast<EmulatedId>(i));
      for (Descriptor d; eb.receive(d) == Status::kOk; ++delivered) {
        std::uint32_t v;
        std::memcpy(&v, d.data, 4);
        ASSERT_EQ(d.channel, b_ch[i]);
        ASSERT_EQ(v, got[i] * kN + i) << "endpoint " << i << " got another endpoint's message";
        ++got[i];
      }
    }
  }
  EXPECT_EQ(delivered, 2 * kN);
  for (std::uint32_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2) << "endpoint " << i;
  for (std::uint32_t i = 0; i < kN; ++i) {
    EXPECT_EQ(mb_->at(static_cast<EmulatedId>(i)).stats().unknown_tag_drops, 0u);
    EXPECT_EQ(mb_->at(static_cast<EmulatedId>(i)).stats().overflow_drops, 0u);
  }
  EXPECT_EQ(mb_->unknown_endpoint_drops(), 0u);

  EndpointMux::Resources r = mb_->resources();
  EXPECT_EQ(r.emulated_endpoints, kN);
  EXPECT_EQ(r.queue_pairs, 1u) << "1000 emulated endpoints must share the one real QP";
  EXPECT_EQ(r.pinned_bytes, b_->segment_bytes());
  std::printf(
      "emulated endpoints: %zu on 1 real endpoint; %u QP, %zu pinned bytes, %zu bytes of emulation "
      "state\n",
      r.emulated_endpoints, r.queue_pairs, r.pinned_bytes, r.emulation_bytes);
}

TEST_F(Emulated, MessagesFromStrangersAreDroppedNotDelivered) {
  EmulatedEndpoint& a0 = ma_->create();
  EmulatedEndpoint& a1 = ma_->create();
  EmulatedEndpoint& b0 = mb_->create();
  EmulatedEndpoint& b1 = mb_->create();
  ChannelId legit = a0.open_channel(ab_, b0.id());
  ChannelId b0_from_a0 = b0.open_channel(ba_, a0.id());
  (void)b1;                                            // b1 has no channel at all
  ChannelId to_b1 = a1.open_channel(ab_, 1);           // b1 never opened a channel to a1
  ChannelId to_nobody = a1.open_channel(ab_, 500);     // no such emulated endpoint on b
  ChannelId a1_as_b0 = a1.open_channel(ab_, b0.id());  // b0 talks to a0 only
  send(a1, to_b1, 1);
  send(a1, to_nobody, 2);
  send(a1, a1_as_b0, 3);
  send(a0, legit, 4);
  Descriptor d;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (b0.receive(d) != Status::kOk && std::chrono::steady_clock::now() < deadline) pump(1ms);
  pump(100ms);
  std::uint32_t v;
  std::memcpy(&v, d.data, 4);
  EXPECT_EQ(v, 4u) << "b0 received a stranger's message";
  EXPECT_EQ(d.channel, b0_from_a0);
  EXPECT_EQ(b0.receive(d), Status::kNoResource);
  EXPECT_EQ(b1.receive(d), Status::kNoResource);
  EXPECT_EQ(b0.stats().unknown_tag_drops, 1u);
  EXPECT_EQ(mb_->at(1).stats().unknown_tag_drops, 1u);
  EXPECT_EQ(mb_->unknown_endpoint_drops(), 1u);
  EXPECT_THROW((void)a0.open_channel(ab_ + 7, 0), verbs::Error);
  EXPECT_EQ(a0.send_inline(99, {}), Status::kNotFound);
}

}  // namespace
}  // namespace unet::core
