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
bool credit_fields_clear(Kind kind, std::uint8_t handler, std::uint8_t token,
                         std::uint8_t arg_count, std::uint16_t payload_length) noexcept {
  return kind != Kind::kCredit ||
         (handler == 0 && token == 0 && arg_count == 0 && payload_length == 0);
}

// The probe rule, shared by check() and decode(): only a kCredit message may carry the probe bit.
bool probe_allowed(Kind kind, bool probe) noexcept { return !probe || kind == Kind::kCredit; }

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
  if (!credit_fields_clear(h.kind, h.handler, h.token, h.arg_count, h.payload_length))
    return WireFault::kCreditFields;
  if (!probe_allowed(h.kind, h.probe)) return WireFault::kProbeNotCredit;
  return WireFault::kNone;
}

Status encode(const Header& h, std::span<std::byte> out) noexcept {
  if (check(h) != WireFault::kNone || out.size() < header_bytes(h.arg_count))
    return Status::kInvalidArgument;
  encode_unchecked(h, out.data());
  return Status::kOk;
}

// The fixed header is two little-endian 64-bit words: bytes 0-7 (magic, version and kind, handler,
// argument count and flags, payload length, credits, token) and bytes 8-15 (seq, ack). Composing
// and storing whole words costs two stores where byte-wise stores cost sixteen.
void encode_unchecked(const Header& h, std::byte* p) noexcept {
  const std::uint8_t flags =
      static_cast<std::uint8_t>(h.arg_count | (h.probe ? kProbeBit : 0) | (h.more ? kMoreBit : 0));
  const auto version_kind =
      static_cast<std::uint8_t>((kWireVersion << 4) | static_cast<std::uint8_t>(h.kind));
  const std::uint64_t w0 = std::uint64_t{kWireMagic} | std::uint64_t{version_kind} << 8 |
                           std::uint64_t{h.handler} << 16 | std::uint64_t{flags} << 24 |
                           std::uint64_t{h.payload_length} << 32 | std::uint64_t{h.credits} << 48 |
                           std::uint64_t{h.token} << 56;
  store_le<std::uint64_t>(p, w0);
  store_le<std::uint64_t>(p + 8, std::uint64_t{h.seq} | std::uint64_t{h.ack} << 32);
  for (std::size_t i = 0; i < h.arg_count; ++i)
    store_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i, h.args[i]);
}

void set_more(std::byte* header) noexcept { header[3] |= std::byte{kMoreBit}; }

// Every check reads the first word (and the sizes) before anything is written: `out` and `used`
// change only on success, and `fault` is written once.
Status decode_front(std::span<const std::byte> in, Header& out, std::size_t& used,
                    WireFault& fault) noexcept {
  const auto refuse = [&fault](WireFault f) {
    fault = f;
    return Status::kInvalidArgument;
  };
  if (in.size() < kFixedHeaderBytes) return refuse(WireFault::kTooShort);
  const std::byte* p = in.data();
  const std::uint64_t w0 = load_le<std::uint64_t>(p);
  const auto b = [w0](unsigned i) { return static_cast<std::uint8_t>(w0 >> (8 * i)); };
  if (b(0) != kWireMagic) return refuse(WireFault::kBadMagic);
  if ((b(1) >> 4) != kWireVersion) return refuse(WireFault::kBadVersion);
  const std::uint8_t kind = b(1) & 0x0F;
  if (!valid_kind(kind)) return refuse(WireFault::kBadKind);
  const std::uint8_t flags = b(3);
  if (flags & kReservedMask) return refuse(WireFault::kReservedBits);
  const std::uint8_t n = flags & kArgCountMask;
  if (n > kMaxArgs) return refuse(WireFault::kBadArgCount);
  if (in.size() < header_bytes(n)) return refuse(WireFault::kTooShort);

  const bool probe = (flags & kProbeBit) != 0, more = (flags & kMoreBit) != 0;
  const auto payload_length = static_cast<std::uint16_t>(w0 >> 32);
  const std::uint8_t handler = b(2), token = b(7);
  const std::size_t size = header_bytes(n) + payload_length;
  if (more ? in.size() < size + kFixedHeaderBytes : in.size() != size)
    return refuse(WireFault::kLengthMismatch);
  if (!credit_fields_clear(static_cast<Kind>(kind), handler, token, n, payload_length))
    return refuse(WireFault::kCreditFields);
  if (!probe_allowed(static_cast<Kind>(kind), probe)) return refuse(WireFault::kProbeNotCredit);

  const std::uint64_t w1 = load_le<std::uint64_t>(p + 8);
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
    out.args[i] = i < n ? load_le<std::uint64_t>(p + kFixedHeaderBytes + 8 * i) : 0;
  fault = WireFault::kNone;
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
