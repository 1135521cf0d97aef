// Header: the bytes in front of every U-Net Active Message — a fixed, versioned layout.
//
// Little-endian, 16 bytes, then `arg_count` 64-bit argument words, then `payload_length` bytes of
// payload (not touched by the codec). Version 1:
//
//   offset size field
//   0      1    magic 0xA5
//   1      1    bits 7..4 version (1); bits 3..0 kind (1..5, see Kind)
//   2      1    handler id (0..255)
//   3      1    bits 2..0 argument count (0..4); bit 3 credit probe (kCredit only: "I have no
//               credit, send me your total"); bit 4 more: another whole message follows this
//               one in the same packet (coalescing, see below); bits 7..5 reserved, zero
//   4      2    payload length in bytes (u16)
//   6      1    credits returned: the running total, modulo 256 (see credit_window.h)
//   7      1    request token (a reply, error reply or store-done echoes its request's)
//   8      4    sequence number of this message on its channel (u32; reliability.h); in a
//               credit/ack-only message, the sequence number the sender's next message will
//               have (so the receiver knows whether it has every message sent before the ack)
//   12     4    cumulative ack: the next sequence number the sender expects from the peer
//   16     8*n  argument words, n = argument count (u64 each)
//   16+8n  len  payload
//
// A packet holds one message or several back to back (a coalesced packet): every message but
// the last has the more bit, and the last ends exactly where the packet ends. Each message is
// whole, with its own header, sequence number and ack; a receiver reads them in order with
// decode_front().
//
// What fits in a descriptor's 108 inline bytes (core::Descriptor::kInlineBytes): the header, up to
// 4 argument words and 92 - 8n bytes of payload beside n words (92 .. 60): a 64-byte payload with
// up to 3 words.
//
// Rules decode() enforces, each with its own WireFault: the message is at least 16 bytes; magic and
// version match; kind is 1..5; argument count is 0..4; reserved bits are zero; the message is
// exactly 16 + 8n + payload_length bytes (no truncation, no trailing bytes) — or, with the more
// bit, at least one fixed header's worth of bytes follows it; a credit/ack-only
// message names no handler, token, arguments or payload (it is not sequenced itself); only a
// credit/ack-only message may carry the probe bit. On any failure `out` is
// left untouched. encode() refuses a header that decode() would refuse. Neither allocates nor
// throws.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "unet/core/always_inline.h"
#include "unet/core/descriptor.h"
#include "unet/core/little_endian.h"
#include "unet/status.h"

namespace unet::uam {

// The layout's constants: magic byte, version, fixed header size, most argument words, largest
// payload.
inline constexpr std::uint8_t kWireMagic = 0xA5;
inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::size_t kFixedHeaderBytes = 16;
inline constexpr std::size_t kMaxArgs = 4;
inline constexpr std::size_t kMaxPayload = UINT16_MAX;

// What a message is (the low nibble of byte 1).
enum class Kind : std::uint8_t {
  kRequest = 1,     // runs a request handler; consumes one credit
  kReply = 2,       // runs a reply handler; answers the request named by `token`
  kErrorReply = 3,  // the request named by `token` failed at the receiver (e.g. unknown handler)
  kCredit = 4,      // credits and ack only: no handler, not sequenced
  kStoreDone = 5,   // a bulk store's data is in place: runs `handler` at the receiver
};

// A message's header, decoded: one field per field of the layout above.
struct Header {
  Kind kind = Kind::kRequest;
  std::uint8_t handler = 0;
  std::uint8_t arg_count = 0;  // 0..kMaxArgs; words past it are not sent
  std::uint16_t payload_length = 0;
  std::uint8_t credits = 0;  // running total of credits returned, modulo 256
  std::uint8_t token = 0;
  bool probe = false;  // kCredit only: the sender is out of credit (credit_window.h)
  bool more = false;   // another message follows this one in the packet
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::array<std::uint64_t, kMaxArgs> args{};

  friend bool operator==(const Header&, const Header&) = default;
};

// Bytes of header and arguments for `arg_count` words (payload excluded).
constexpr std::size_t header_bytes(std::size_t arg_count) noexcept {
  return kFixedHeaderBytes + 8 * arg_count;
}
// Bytes of the whole message: header, arguments and payload.
constexpr std::size_t message_bytes(const Header& h) noexcept {
  return header_bytes(h.arg_count) + h.payload_length;
}

static_assert(header_bytes(3) + 64 <= core::Descriptor::kInlineBytes,
              "header, 3 words and 64 bytes ride inside a descriptor");

// Why a message was refused, one value per rule (kNone: it was accepted).
enum class WireFault : std::uint8_t {
  kNone,
  kTooShort,  // fewer bytes than the fixed header, or than header + arguments
  kBadMagic,
  kBadVersion,
  kBadKind,
  kBadArgCount,     // more than kMaxArgs
  kReservedBits,    // reserved bits of byte 3 are set
  kLengthMismatch,  // message size != 16 + 8n + payload_length (with the more bit: less than a
                    // fixed header follows it)
  kCreditFields,    // a kCredit message names a handler, token, arguments or payload
  kProbeNotCredit,  // the probe bit on a message other than kCredit
};
// The fault's name, for logs and test messages.
std::string_view to_string(WireFault f) noexcept;

// Checks `h` against the rules above (for encode); kNone when it may be sent.
WireFault check(const Header& h) noexcept;

// Writes header and arguments (header_bytes(h.arg_count) bytes) to the front of `out`; the caller
// places the payload after them. kInvalidArgument (nothing written) when `h` breaks a rule or
// `out` is shorter than header_bytes(h.arg_count).
[[nodiscard]] Status encode(const Header& h, std::span<std::byte> out) noexcept;
// encode() without its checks, for a sender that built `h` from parts it already checked: writes
// header_bytes(h.arg_count) bytes at `out`. `h` must pass check() and arg_count <= kMaxArgs.
inline void encode_unchecked(const Header& h, std::byte* out) noexcept;

// Sets the more bit of the message encoded at `header`: another message is being placed after it.
inline void set_more(std::byte* header) noexcept;

// Reads the message at the front of packet `in`, validating every field; on kOk `out` holds its
// header, `used` its size (message_bytes(out)), its payload is in.subspan(header_bytes(
// out.arg_count), out.payload_length), and when out.more the next message starts at in[used].
// On failure returns kInvalidArgument, sets `fault` to the rule broken and leaves `out` and
// `used` untouched.
[[nodiscard]] inline Status decode_front(std::span<const std::byte> in, Header& out,
                                         std::size_t& used, WireFault& fault) noexcept;
// Reads a packet of exactly one message (no more bit), as decode_front() does.
[[nodiscard]] Status decode(std::span<const std::byte> in, Header& out) noexcept;
[[nodiscard]] Status decode(std::span<const std::byte> in, Header& out, WireFault& fault) noexcept;

// The data path's halves of the codec, inline: a message is encoded and decoded on every send and
// arrival, and a call per header costs more than its few stores and loads.
namespace wire {
// Byte 3's bits, and the rules check() and decode_front() share.
inline constexpr std::uint8_t kArgCountMask = 0x07;
inline constexpr std::uint8_t kProbeBit = 0x08;
inline constexpr std::uint8_t kMoreBit = 0x10;
inline constexpr std::uint8_t kReservedMask = 0xE0;

inline bool valid_kind(std::uint8_t k) noexcept {
  return k >= static_cast<std::uint8_t>(Kind::kRequest) &&
         k <= static_cast<std::uint8_t>(Kind::kStoreDone);
}

// The kCredit rule, shared by check() and decode().
inline bool credit_fields_clear(Kind kind, std::uint8_t handler, std::uint8_t token,
                                std::uint8_t arg_count, std::uint16_t payload_length) noexcept {
  return kind != Kind::kCredit ||
         (handler == 0 && token == 0 && arg_count == 0 && payload_length == 0);
}

// The probe rule, shared by check() and decode(): only a kCredit message may carry the probe bit.
inline bool probe_allowed(Kind kind, bool probe) noexcept {
  return !probe || kind == Kind::kCredit;
}
}  // namespace wire

// The fixed header is two little-endian 64-bit words: bytes 0-7 (magic, version and kind, handler,
// argument count and flags, payload length, credits, token) and bytes 8-15 (seq, ack). Composing
// and storing whole words costs two stores where byte-wise stores cost sixteen.
UNET_ALWAYS_INLINE void encode_unchecked(const Header& h, std::byte* p) noexcept {
  const std::uint8_t flags = static_cast<std::uint8_t>(
      h.arg_count | (h.probe ? wire::kProbeBit : 0) | (h.more ? wire::kMoreBit : 0));
  const auto version_kind =
      static_cast<std::uint8_t>((kWireVersion << 4) | static_cast<std::uint8_t>(h.kind));
  const std::uint64_t w0 = std::uint64_t{kWireMagic} | std::uint64_t{version_kind} << 8 |
                           std::uint64_t{h.handler} << 16 | std::uint64_t{flags} << 24 |
                           std::uint64_t{h.payload_length} << 32 | std::uint64_t{h.credits} << 48 |
                           std::uint64_t{h.token} << 56;
  core::store_le<std::uint64_t>(p, w0);
  core::store_le<std::uint64_t>(p + 8, std::uint64_t{h.seq} | std::uint64_t{h.ack} << 32);
  for (std::size_t i = 0; i < h.arg_count; ++i)
    core::store_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i, h.args[i]);
}

inline void set_more(std::byte* header) noexcept { header[3] |= std::byte{wire::kMoreBit}; }

// Every check reads the first word (and the sizes) before anything is written: `out` and `used`
// change only on success, and `fault` is written once.
UNET_ALWAYS_INLINE Status decode_front(std::span<const std::byte> in, Header& out,
                                       std::size_t& used, WireFault& fault) noexcept {
  const auto refuse = [&fault](WireFault f) {
    fault = f;
    return Status::kInvalidArgument;
  };
  if (in.size() < kFixedHeaderBytes) return refuse(WireFault::kTooShort);
  const std::byte* p = in.data();
  const std::uint64_t w0 = core::load_le<std::uint64_t>(p);
  const auto b = [w0](unsigned i) { return static_cast<std::uint8_t>(w0 >> (8 * i)); };
  if (b(0) != kWireMagic) return refuse(WireFault::kBadMagic);
  if ((b(1) >> 4) != kWireVersion) return refuse(WireFault::kBadVersion);
  const std::uint8_t kind = b(1) & 0x0F;
  if (!wire::valid_kind(kind)) return refuse(WireFault::kBadKind);
  const std::uint8_t flags = b(3);
  if (flags & wire::kReservedMask) return refuse(WireFault::kReservedBits);
  const std::uint8_t n = flags & wire::kArgCountMask;
  if (n > kMaxArgs) return refuse(WireFault::kBadArgCount);
  if (in.size() < header_bytes(n)) return refuse(WireFault::kTooShort);

  const bool probe = (flags & wire::kProbeBit) != 0, more = (flags & wire::kMoreBit) != 0;
  const auto payload_length = static_cast<std::uint16_t>(w0 >> 32);
  const std::uint8_t handler = b(2), token = b(7);
  const std::size_t size = header_bytes(n) + payload_length;
  if (more ? in.size() < size + kFixedHeaderBytes : in.size() != size)
    return refuse(WireFault::kLengthMismatch);
  if (!wire::credit_fields_clear(static_cast<Kind>(kind), handler, token, n, payload_length))
    return refuse(WireFault::kCreditFields);
  if (!wire::probe_allowed(static_cast<Kind>(kind), probe))
    return refuse(WireFault::kProbeNotCredit);

  const std::uint64_t w1 = core::load_le<std::uint64_t>(p + 8);
  out.kind = static_cast<Kind>(kind);
  out.handler = handler;
  out.arg_count = n;
  out.payload_length = payload_length;
  out.credits = b(6);
  out.token = token;
  out.probe = probe;
  out.more = more;
  out.seq = static_cast<std::uint32_t>(w1);
  out.ack = static_cast<std::uint32_t>(w1 >> 32);
  for (std::size_t i = 0; i < kMaxArgs; ++i)
    out.args[i] = i < n ? core::load_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i) : 0;
  fault = WireFault::kNone;
  used = size;
  return Status::kOk;
}

}  // namespace unet::uam
