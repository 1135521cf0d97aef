// Descriptor: one entry of an endpoint's send or receive queue — U-Net's message descriptor.
//
// It names a channel (the tag), a buffer of the communication segment and a length, and carries
// small messages inside itself (the paper's small-message optimization): kInlineBytes of payload
// ride in the descriptor, so a small send needs no buffer and a small arrival frees its buffer at
// once. One descriptor is two 64-byte cache lines (pinned by a static_assert and a test): room for
// a 64-byte message and the header of a layer above (core/README.md, "Why 108 bytes").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "unet/core/always_inline.h"

namespace unet::core {

// A channel of an endpoint (the tag, from the application's side) and a buffer of its segment.
using ChannelId = std::uint32_t;
using BufferId = std::uint32_t;

// "None": no channel, no buffer (an inline descriptor has no buffer).
inline constexpr ChannelId kNoChannel = UINT32_MAX;
inline constexpr BufferId kNoBuffer = UINT32_MAX;

// One message descriptor: what a send names, or what an arrival delivered.
struct alignas(64) Descriptor {
  static constexpr std::size_t kInlineBytes = 108;

  enum Flags : std::uint16_t {
    kInline = 1 << 0,  // the payload is in `data`, not in a buffer
    kOp = 1 << 1,      // send queue only: a direct-access operation; `buffer` is its op slot
    kImm = 1 << 2,     // `imm` travels with the message (emulated endpoints' ids)
    kProbe = 1 << 3,   // send queue only: a liveness probe (Endpoint::probe), no payload
  };

  ChannelId channel = kNoChannel;  // the tag: which channel the message travels on
  std::uint32_t length = 0;        // payload bytes
  BufferId buffer = kNoBuffer;     // segment buffer holding the payload (unless kInline)
  std::uint16_t flags = 0;
  std::uint16_t reserved = 0;
  std::uint32_t imm = 0;         // immediate data (valid when kImm)
  std::byte data[kInlineBytes];  // inline payload (valid for `length` bytes when kInline)

  bool is_inline() const noexcept { return flags & kInline; }
  std::span<const std::byte> inline_payload() const noexcept { return {data, length}; }
};

static_assert(sizeof(Descriptor) == 128, "a descriptor is two cache lines");

// The most bytes copy_small() copies.
inline constexpr std::size_t kCopySmallMax = 128;

// Copies n <= kCopySmallMax bytes (a descriptor's inline payload) between two buffers that do not
// overlap, as at most two fixed-size moves that may overlap each other (three below 4 bytes),
// reading and writing only [0, n) of each side. Inlined where it is used: on the data path of every
// small send and arrival a call to memcpy for a few bytes costs more than the copy (a call and an
// indirect return, which an emulated CPU pays dearly for).
UNET_ALWAYS_INLINE void copy_small(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  if (n >= 32) {
    if (n >= 64) {
      std::memcpy(dst, src, 64);
      std::memcpy(dst + n - 64, src + n - 64, 64);
    } else {
      std::memcpy(dst, src, 32);
      std::memcpy(dst + n - 32, src + n - 32, 32);
    }
  } else if (n >= 16) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}
static_assert(Descriptor::kInlineBytes <= kCopySmallMax, "copy_small covers an inline payload");

// The most bytes copy_bytes() hands memcpy at once. Above a CPU-dependent threshold (8 KiB in
// ci/rxe-vm) glibc's memcpy moves bytes with `rep movsb`, which QEMU's TCG runs about six times
// slower than vector moves (ulp/README.md); on hardware a piece costs one call.
inline constexpr std::size_t kCopyPiece = 4096;

// Copies n > kCopySmallMax bytes by memcpy, in pieces of at most kCopyPiece.
inline void copy_large(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  for (; n > kCopyPiece; n -= kCopyPiece, dst += kCopyPiece, src += kCopyPiece)
    std::memcpy(dst, src, kCopyPiece);
  std::memcpy(dst, src, n);
}

// Copies n bytes, any number, between two buffers that do not overlap: as copy_small() up to
// kCopySmallMax (no call), by copy_large() beyond. For copies mostly small but not always.
UNET_ALWAYS_INLINE void copy_bytes(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  if (n <= kCopySmallMax)
    copy_small(dst, src, n);
  else
    copy_large(dst, src, n);
}

// Composes a send descriptor carrying `payload` inside itself (payload.size() <= kInlineBytes,
// checked by the caller). The endpoint's send_inline() does exactly this in its send-queue slot.
inline void compose_inline(Descriptor& d, ChannelId ch, std::span<const std::byte> payload,
                           std::uint16_t flags, std::uint32_t imm) noexcept {
  d.channel = ch;
  d.length = static_cast<std::uint32_t>(payload.size());
  d.buffer = kNoBuffer;
  d.flags = flags | Descriptor::kInline;
  d.imm = imm;
  copy_small(d.data, payload.data(), payload.size());
}

// Composes a send descriptor naming segment buffer `b` (the endpoint's send() path).
inline void compose_buffer(Descriptor& d, ChannelId ch, BufferId b, std::uint32_t length,
                           std::uint16_t flags, std::uint32_t imm) noexcept {
  d.channel = ch;
  d.length = length;
  d.buffer = b;
  d.flags = flags;
  d.imm = imm;
}

}  // namespace unet::core
