// libFuzzer target for the UAM wire header: decode() must accept or refuse any bytes without
// crashing or reading past them, leave its output untouched on refusal, and whatever it accepts
// must encode back to the same header bytes (the codec is canonical). The same bytes read as a
// coalesced packet: decode_front() walks it message by message under the same rules, every
// message but the last has the more bit, and an accepted packet ends exactly at its last message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "unet/uam/wire_header.h"

using namespace unet::uam;

namespace {

void canonical(const Header& h, const std::byte* at) {
  if (check(h) != WireFault::kNone) std::abort();
  std::byte again[header_bytes(kMaxArgs)];
  if (encode(h, again) != unet::Status::kOk) std::abort();
  if (std::memcmp(again, at, header_bytes(h.arg_count)) != 0) std::abort();
}

void walk_packet(std::span<const std::byte> in) {
  while (true) {
    Header h;
    h.handler = 0x5A;
    const Header before = h;
    std::size_t used = 7;
    WireFault fault = WireFault::kNone;
    if (decode_front(in, h, used, fault) != unet::Status::kOk) {
      if (fault == WireFault::kNone || !(h == before) || used != 7) std::abort();
      return;
    }
    if (used != message_bytes(h) || used > in.size()) std::abort();
    canonical(h, in.data());
    if (!h.more) {
      if (used != in.size()) std::abort();
      return;
    }
    in = in.subspan(used);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  walk_packet(in);
  Header out;
  out.handler = 0x5A;
  const Header before = out;
  WireFault fault = WireFault::kNone;
  if (decode(in, out, fault) != unet::Status::kOk) {
    if (fault == WireFault::kNone || !(out == before)) std::abort();
    return 0;
  }
  if (fault != WireFault::kNone || out.more || message_bytes(out) != size) std::abort();
  canonical(out, in.data());
  return 0;
}
