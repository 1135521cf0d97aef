// Unit: the buffer-size field of a channel offer and the per-channel message limit.
#include "offer_limit.h"

#include <gtest/gtest.h>

#include <array>
#include <span>
#include <string>
#include <string_view>

namespace unet::core::offer {
namespace {

TEST(OfferLimit, TheFieldRoundTripsAndComesOffTheLineEnd) {
  for (std::uint32_t bytes : {1u, 256u, 4096u, 65536u, kMaxBuffer}) {
    const std::string line = "unet-oob/1 head ring=40x400" + encode_buffer_field(bytes) + "\n";
    std::string_view v = line;
    std::uint32_t got = 7;
    ASSERT_TRUE(split_buffer_field(v, got)) << line;
    EXPECT_EQ(got, bytes);
    EXPECT_EQ(v, "unet-oob/1 head ring=40x400")
        << "the rest of the line is left for the ring field";
  }
  EXPECT_EQ(encode_buffer_field(4096), " buf=1000");
}

TEST(OfferLimit, ALineWithoutTheFieldStatesNoBuffer) {
  std::string_view v = "unet-oob/1 head\n";
  std::uint32_t got = 7;
  ASSERT_TRUE(split_buffer_field(v, got));
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(v, "unet-oob/1 head\n");
}

TEST(OfferLimit, MalformedOrOutOfRangeFieldsAreRefusedWithNothingChanged) {
  for (const char* bad :
       {" buf=", " buf=0", " buf=0400", " buf=400 ", " buf=40G", " buf=4O0", " buf=-400",
        " buf=+400", " buf=80000001", " buf=fffffffff", " buf=1x2", " buf=400\n\n"}) {
    const std::string line = std::string("unet-oob/1 head") + bad + "\n";
    std::string_view v = line;
    std::uint32_t got = 7;
    EXPECT_FALSE(split_buffer_field(v, got)) << bad;
    EXPECT_EQ(got, 7u) << bad;
    EXPECT_EQ(v, line) << bad;
  }
}

TEST(OfferLimit, TheCmBlockRoundTripsAndPaddingStatesNoBuffer) {
  std::array<std::byte, kBufferBlockBytes> block{};
  for (std::uint32_t bytes : {1u, 512u, 65536u, kMaxBuffer}) {
    encode_buffer_block(bytes, block);
    std::uint32_t got = 7;
    ASSERT_TRUE(decode_buffer_block(block, got));
    EXPECT_EQ(got, bytes);
  }
  const std::array<std::byte, 56> padding{};  // what the CM delivers from a peer that sent none
  std::uint32_t got = 7;
  ASSERT_TRUE(decode_buffer_block(padding, got));
  EXPECT_EQ(got, 0u);
  got = 7;
  ASSERT_TRUE(decode_buffer_block({}, got));
  EXPECT_EQ(got, 0u);
}

TEST(OfferLimit, AMalformedCmBlockIsRefusedWithNothingChanged) {
  std::array<std::byte, kBufferBlockBytes> block{};
  for (std::uint32_t bytes : {0u, kMaxBuffer + 1, 0xffffffffu}) {
    encode_buffer_block(bytes, block);
    std::uint32_t got = 7;
    EXPECT_FALSE(decode_buffer_block(block, got)) << bytes;
    EXPECT_EQ(got, 7u);
  }
  encode_buffer_block(512, block);
  std::uint32_t got = 7;
  EXPECT_FALSE(decode_buffer_block(std::span<const std::byte>(block).first(6), got)) << "cut short";
  EXPECT_EQ(got, 7u);
}

TEST(OfferLimit, AChannelSendsNoMoreThanBothEndsTake) {
  EXPECT_EQ(channel_limit(4096, true, 1024, 4096), 1024u) << "UD: the peer's smaller MTU";
  EXPECT_EQ(channel_limit(1024, true, 4096, 4096), 1024u) << "UD: ours";
  EXPECT_EQ(channel_limit(1024, true, 1024, 512), 512u) << "UD: the peer's smaller buffers";
  EXPECT_EQ(channel_limit(65536, false, 1024, 8192), 8192u)
      << "RC: the MTU does not bound a message";
  EXPECT_EQ(channel_limit(4096, false, 1024, 0), 4096u)
      << "a peer that said nothing bounds nothing";
  EXPECT_EQ(channel_limit(4096, true, 0, 0), 4096u);
}

}  // namespace
}  // namespace unet::core::offer
