// The UAM wire header codec's checked entry points and fault names; the data path's halves
// (encode_unchecked, decode_front) are inline in the header.
#include "unet/uam/wire_header.h"

namespace unet::uam {

using wire::credit_fields_clear;
using wire::probe_allowed;
using wire::valid_kind;

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
