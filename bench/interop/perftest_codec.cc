// The fields ib_send_lat (perftest 6.06) exchanges: the address line (plain), the binary address
// (-R), the version and MTU fields. Formats in ib_send_lat_oob.h and PERFTEST.md.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "ib_send_lat_oob.h"
#include "unet/verbs/error.h"

namespace unet::bench {
namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A cursor over the fixed-format line: exactly `width` hex digits, then the separator.
class Fields {
 public:
  explicit Fields(std::span<const char> s) : s_(s) {}
  bool hex(std::size_t width, std::uint64_t& out) {
    if (pos_ + width > s_.size()) return false;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) {
      int d = hex_digit(s_[pos_ + i]);
      if (d < 0) return false;
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    pos_ += width;
    out = v;
    return true;
  }
  bool sep(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool at_end() const { return pos_ == s_.size(); }

 private:
  std::span<const char> s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string encode_perftest_address(const PerftestAddress& a, bool with_gid) {
  if (a.qpn > 0xffffff || a.psn > 0xffffff)
    verbs::throw_error("encode_perftest_address", "address", EINVAL, "QPN and PSN are 24 bits");
  char buf[kPerftestLineGidBytes];
  int n = std::snprintf(buf, sizeof buf, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":",
                        static_cast<unsigned>(a.lid), static_cast<unsigned>(a.out_reads),
                        static_cast<unsigned>(a.qpn), static_cast<unsigned>(a.psn),
                        static_cast<unsigned>(a.rkey), a.vaddr);
  if (with_gid) {
    for (std::uint8_t b : a.gid.raw)
      n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n),
                         "%02x:", static_cast<unsigned>(b));
    n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n),
                       "%08x:", static_cast<unsigned>(a.srqn));
  } else {
    n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), "%08x",
                       static_cast<unsigned>(a.srqn));
  }
  std::string line(buf, static_cast<std::size_t>(n));
  line.push_back('\0');
  if (line.size() != (with_gid ? kPerftestLineGidBytes : kPerftestLineBytes))
    verbs::throw_error("encode_perftest_address", "address", EINVAL, "unexpected line length");
  return line;
}

Status decode_perftest_address(std::span<const char> wire, bool with_gid, PerftestAddress& out,
                               const char** why) noexcept {
  auto fail = [why](const char* reason) {
    if (why) *why = reason;
    return Status::kInvalidArgument;
  };
  const std::size_t want = with_gid ? kPerftestLineGidBytes : kPerftestLineBytes;
  if (wire.size() != want) return fail(with_gid ? "not 108 bytes" : "not 59 bytes");
  if (wire[want - 1] != '\0') return fail("not NUL-terminated");
  Fields f(wire.first(want - 1));
  std::uint64_t lid, reads, qpn, psn, rkey, vaddr, srqn;
  if (!f.hex(4, lid) || !f.sep(':')) return fail("LID is not 4 hex digits and ':'");
  if (!f.hex(4, reads) || !f.sep(':')) return fail("OUT_READS is not 4 hex digits and ':'");
  if (!f.hex(6, qpn) || !f.sep(':')) return fail("QPN is not 6 hex digits and ':'");
  if (!f.hex(6, psn) || !f.sep(':')) return fail("PSN is not 6 hex digits and ':'");
  if (!f.hex(8, rkey) || !f.sep(':')) return fail("RKEY is not 8 hex digits and ':'");
  if (!f.hex(16, vaddr) || !f.sep(':')) return fail("VADDR is not 16 hex digits and ':'");
  PerftestAddress a;
  if (with_gid) {
    for (std::size_t i = 0; i < 16; ++i) {
      std::uint64_t b;
      if (!f.hex(2, b) || !f.sep(':')) return fail("GID is not 16 x (2 hex digits and ':')");
      a.gid.raw[i] = static_cast<std::uint8_t>(b);
    }
    if (!f.hex(8, srqn) || !f.sep(':')) return fail("SRQN is not 8 hex digits and ':'");
  } else if (!f.hex(8, srqn)) {
    return fail("SRQN is not 8 hex digits");
  }
  if (!f.at_end()) return fail("trailing characters");
  if (qpn < 2) return fail("QPN 0 or 1 is not an RC queue pair");
  a.lid = static_cast<std::uint16_t>(lid);
  a.out_reads = static_cast<std::uint16_t>(reads);
  a.qpn = static_cast<std::uint32_t>(qpn);
  a.psn = static_cast<std::uint32_t>(psn);
  a.rkey = static_cast<std::uint32_t>(rkey);
  a.vaddr = vaddr;
  a.srqn = static_cast<std::uint32_t>(srqn);
  out = a;
  return Status::kOk;
}

std::array<char, kPerftestVersionBytes> encode_perftest_version(std::string_view version) {
  std::array<char, kPerftestVersionBytes> v{};
  if (version.size() >= v.size())
    verbs::throw_error("encode_perftest_version", version, EINVAL, "at most 15 characters");
  std::copy(version.begin(), version.end(), v.begin());
  std::string check;
  if (decode_perftest_version(v, check) != Status::kOk)
    verbs::throw_error("encode_perftest_version", version, EINVAL, "not a version like \"6.06\"");
  return v;
}

Status decode_perftest_version(std::span<const char> wire, std::string& out) noexcept {
  if (wire.size() != kPerftestVersionBytes) return Status::kInvalidArgument;
  std::size_t n = 0;
  while (n < wire.size() && wire[n] != '\0') ++n;
  if (n == 0 || n == wire.size()) return Status::kInvalidArgument;  // empty or no NUL
  int dots = 0;
  for (std::size_t i = 0; i < n; ++i) {
    char c = wire[i];
    if (c == '.') {
      if (++dots > 1 || i == 0 || i + 1 == n) return Status::kInvalidArgument;
    } else if (c < '0' || c > '9') {
      return Status::kInvalidArgument;
    }
  }
  try {
    out.assign(wire.data(), n);
  } catch (...) {
    return Status::kNoResource;
  }
  return Status::kOk;
}

std::array<char, 2> encode_perftest_mtu(std::uint32_t mtu_bytes) {
  for (char d = '1'; d <= '5'; ++d)
    if (mtu_bytes == 256u << (d - '1')) return {d, '\0'};
  verbs::throw_error("encode_perftest_mtu", std::to_string(mtu_bytes), EINVAL, "not 256..4096");
}

std::uint32_t decode_perftest_mtu(std::span<const char> wire) noexcept {
  if (wire.size() != 2 || wire[1] != '\0' || wire[0] < '1' || wire[0] > '5') return 0;
  return 256u << (wire[0] - '1');
}

std::array<std::byte, kPerftestDestBytes> encode_perftest_dest(const PerftestAddress& a,
                                                               std::int32_t gid_index) {
  std::array<std::byte, kPerftestDestBytes> out{};
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<std::byte>(v >> (24 - 8 * i));
  };
  put32(0, a.lid);
  put32(4, a.out_reads);
  put32(8, a.qpn);
  put32(12, a.psn);
  put32(16, a.rkey);
  // 20..23: padding before the 8-byte-aligned VADDR
  put32(24, static_cast<std::uint32_t>(a.vaddr >> 32));
  put32(28, static_cast<std::uint32_t>(a.vaddr));
  for (std::size_t i = 0; i < 16; ++i) out[32 + i] = static_cast<std::byte>(a.gid.raw[i]);
  put32(48, a.srqn);
  put32(52, static_cast<std::uint32_t>(gid_index));
  return out;
}

Status decode_perftest_dest(std::span<const std::byte> wire, PerftestAddress& out) noexcept {
  if (wire.size() != kPerftestDestBytes) return Status::kInvalidArgument;
  auto get32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | std::to_integer<std::uint32_t>(wire[at + i]);
    return v;
  };
  PerftestAddress a;
  if (get32(0) > 0xffff || get32(4) > 0xffff || get32(8) > 0xffffff || get32(12) > 0xffffff)
    return Status::kInvalidArgument;
  a.lid = static_cast<std::uint16_t>(get32(0));
  a.out_reads = static_cast<std::uint16_t>(get32(4));
  a.qpn = get32(8);
  a.psn = get32(12);
  a.rkey = get32(16);
  a.vaddr = std::uint64_t{get32(24)} << 32 | get32(28);
  for (std::size_t i = 0; i < 16; ++i) a.gid.raw[i] = std::to_integer<std::uint8_t>(wire[32 + i]);
  a.srqn = get32(48);
  out = a;
  return Status::kOk;
}

}  // namespace unet::bench
