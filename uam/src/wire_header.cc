// The UAM wire header codec: explicit little-endian byte stores, so the layout does not depend on
// the host's byte order or on struct padding.
#include "unet/uam/wire_header.h"

#include "unet/core/little_endian.h"

namespace unet::uam {
namespace {

using core::load_le;
using core::store_le;

constexpr std::uint8_t kArgCountMask = 0x07;
constexpr std::uint8_t kProbeBit = 0x08;
constexpr std::uint8_t kMoreBit = 0x10;
constexpr std::uint8_t kReservedMask = 0xE0;

bool valid_kind(std::uint8_t k) noexcept {
  return k >= static_cast<std::uint8_t>(Kind::kRequest) &&
         k <= static_cast<std::uint8_t>(Kind::kStoreDone);
}

// The kCredit rule, shared by check() and decode().
bool credit_fields_clear(const Header& h) noexcept {
  return h.kind != Kind::kCredit || (h.handler == 0 && h.token == 0 && h.arg_count == 0 &&
                                     h.payload_length == 0);
}

}  // namespace

std::string_view to_string(WireFault f) noexcept {
  switch (f) {
    case WireFault::kNone:
      return "none";
    case WireFault::kTooShort:
      return "too short";
    case WireFault::kBadMagic:
      return "bad magic";
    case WireFault::kBadVersion:
      return "bad version";
    case WireFault::kBadKind:
      return "bad kind";
    case WireFault::kBadArgCount:
      return "bad argument count";
    case WireFault::kReservedBits:
      return "reserved bits set";
    case WireFault::kLengthMismatch:
      return "length mismatch";
    case WireFault::kCreditFields:
      return "credit message with fields";
    case WireFault::kProbeNotCredit:
      return "probe bit outside a credit message";
  }
  return "unknown wire fault";
}

WireFault check(const Header& h) noexcept {
  if (!valid_kind(static_cast<std::uint8_t>(h.kind))) return WireFault::kBadKind;
  if (h.arg_count > kMaxArgs) return WireFault::kBadArgCount;
  if (!credit_fields_clear(h)) return WireFault::kCreditFields;
  if (h.probe && h.kind != Kind::kCredit) return WireFault::kProbeNotCredit;
  return WireFault::kNone;
}

Status encode(const Header& h, std::span<std::byte> out) noexcept {
  if (check(h) != WireFault::kNone || out.size() < header_bytes(h.arg_count))
    return Status::kInvalidArgument;
  encode_unchecked(h, out.data());
  return Status::kOk;
}

void encode_unchecked(const Header& h, std::byte* p) noexcept {
  p[0] = std::byte{kWireMagic};
  p[1] = static_cast<std::byte>((kWireVersion << 4) | static_cast<std::uint8_t>(h.kind));
  p[2] = std::byte{h.handler};
  p[3] = static_cast<std::byte>(h.arg_count | (h.probe ? kProbeBit : 0) | (h.more ? kMoreBit : 0));
  store_le<std::uint16_t>(p + 4, h.payload_length);
  p[6] = std::byte{h.credits};
  p[7] = std::byte{h.token};
  store_le<std::uint32_t>(p + 8, h.seq);
  store_le<std::uint32_t>(p + 12, h.ack);
  for (std::size_t i = 0; i < h.arg_count; ++i)
    store_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i, h.args[i]);
}

void set_more(std::byte* header) noexcept { header[3] |= std::byte{kMoreBit}; }

Status decode_front(std::span<const std::byte> in, Header& out, std::size_t& used,
                    WireFault& fault) noexcept {
  fault = WireFault::kTooShort;
  if (in.size() < kFixedHeaderBytes) return Status::kInvalidArgument;
  const std::byte* p = in.data();
  const auto b = [p](std::size_t i) { return static_cast<std::uint8_t>(p[i]); };
  fault = WireFault::kBadMagic;
  if (b(0) != kWireMagic) return Status::kInvalidArgument;
  fault = WireFault::kBadVersion;
  if ((b(1) >> 4) != kWireVersion) return Status::kInvalidArgument;
  fault = WireFault::kBadKind;
  if (!valid_kind(b(1) & 0x0F)) return Status::kInvalidArgument;
  fault = WireFault::kReservedBits;
  if (b(3) & kReservedMask) return Status::kInvalidArgument;
  fault = WireFault::kBadArgCount;
  const std::uint8_t n = b(3) & kArgCountMask;
  if (n > kMaxArgs) return Status::kInvalidArgument;
  fault = WireFault::kTooShort;
  if (in.size() < header_bytes(n)) return Status::kInvalidArgument;

  Header h;
  h.kind = static_cast<Kind>(b(1) & 0x0F);
  h.handler = b(2);
  h.arg_count = n;
  h.probe = (b(3) & kProbeBit) != 0;
  h.more = (b(3) & kMoreBit) != 0;
  h.payload_length = load_le<std::uint16_t>(p + 4);
  h.credits = b(6);
  h.token = b(7);
  h.seq = load_le<std::uint32_t>(p + 8);
  h.ack = load_le<std::uint32_t>(p + 12);
  for (std::size_t i = 0; i < n; ++i)
    h.args[i] = load_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i);

  fault = WireFault::kLengthMismatch;
  const std::size_t size = message_bytes(h);
  if (h.more ? in.size() < size + kFixedHeaderBytes : in.size() != size)
    return Status::kInvalidArgument;
  fault = WireFault::kCreditFields;
  if (!credit_fields_clear(h)) return Status::kInvalidArgument;
  fault = WireFault::kProbeNotCredit;
  if (h.probe && h.kind != Kind::kCredit) return Status::kInvalidArgument;
  fault = WireFault::kNone;
  out = h;
  used = size;
  return Status::kOk;
}

Status decode(std::span<const std::byte> in, Header& out, WireFault& fault) noexcept {
  // A lone message: decode_front() into a copy, so that a more bit leaves `out` untouched.
  Header h;
  std::size_t used = 0;
  if (Status s = decode_front(in, h, used, fault); s != Status::kOk) return s;
  if (h.more) {
    fault = WireFault::kLengthMismatch;
    return Status::kInvalidArgument;
  }
  out = h;
  return Status::kOk;
}

Status decode(std::span<const std::byte> in, Header& out) noexcept {
  WireFault ignored;
  return decode(in, out, ignored);
}

}  // namespace unet::uam
