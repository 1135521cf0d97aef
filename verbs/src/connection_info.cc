#include "unet/verbs/connection_info.h"

#include <cinttypes>
#include <cstdio>
#include <random>

namespace unet::verbs {
namespace {

// A lowercase hex digit's value, else -1.
int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// A cursor over one line that accepts exactly the expected text and fixed-width fields: the line
// encode() writes, and no other spelling of the same values.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  bool literal(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit) return false;
    s_.remove_prefix(lit.size());
    return true;
  }
  // Exactly `width` lowercase hex digits (as encode() writes them) into `out`.
  bool hex(std::size_t width, std::uint64_t& out) {
    if (s_.size() < width) return false;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) {
      int d = hex_digit(s_[i]);
      if (d < 0) return false;
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    s_.remove_prefix(width);
    out = v;
    return true;
  }
  // 1 to 5 decimal digits, no leading zero (as encode() writes them).
  bool dec(std::uint64_t& out) {
    std::size_t i = 0;
    std::uint64_t v = 0;
    while (i < s_.size() && i < 5 && s_[i] >= '0' && s_[i] <= '9')
      v = v * 10 + static_cast<std::uint64_t>(s_[i++] - '0');
    if (i == 0 || (i < s_.size() && s_[i] >= '0' && s_[i] <= '9')) return false;
    if (i > 1 && s_[0] == '0') return false;
    s_.remove_prefix(i);
    out = v;
    return true;
  }
  // 32 lowercase hex digits (Gid::from_hex() alone would take uppercase too).
  bool gid(Gid& out) {
    if (s_.size() < 32) return false;
    for (std::size_t i = 0; i < 32; ++i)
      if (hex_digit(s_[i]) < 0) return false;
    auto g = Gid::from_hex(s_.substr(0, 32));
    if (!g) return false;
    s_.remove_prefix(32);
    out = *g;
    return true;
  }
  bool done() const { return s_.empty() || s_ == "\n"; }

 private:
  std::string_view s_;
};

bool valid_mtu(std::uint64_t m) {
  return m == 0 || m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096;
}

}  // namespace

std::string encode(const ConnectionInfo& i) {
  char buf[kConnectionInfoMaxLine];
  int n = std::snprintf(buf, sizeof buf,
                        "%.*s lid=%04x qpn=%06x psn=%06x gid=%s mtu=%u qkey=%08x addr=%016" PRIx64
                        " rkey=%08x len=%016" PRIx64 "\n",
                        static_cast<int>(kConnectionInfoMagic.size()), kConnectionInfoMagic.data(),
                        i.lid, i.qpn & 0xffffff, i.psn & 0xffffff, i.gid.to_hex().c_str(), i.mtu,
                        i.qkey, i.memory.addr, i.memory.rkey, i.memory.length);
  return std::string(buf, static_cast<std::size_t>(n));
}

Status decode(std::string_view line, ConnectionInfo& out) noexcept {
  if (line.size() > kConnectionInfoMaxLine) return Status::kInvalidArgument;
  Reader r(line);
  ConnectionInfo i;
  std::uint64_t lid, qpn, psn, mtu, qkey, addr, rkey, len;
  bool ok = r.literal(kConnectionInfoMagic) && r.literal(" lid=") && r.hex(4, lid) &&
            r.literal(" qpn=") && r.hex(6, qpn) && r.literal(" psn=") && r.hex(6, psn) &&
            r.literal(" gid=") && r.gid(i.gid) && r.literal(" mtu=") && r.dec(mtu) &&
            r.literal(" qkey=") && r.hex(8, qkey) && r.literal(" addr=") && r.hex(16, addr) &&
            r.literal(" rkey=") && r.hex(8, rkey) && r.literal(" len=") && r.hex(16, len) &&
            r.done() && valid_mtu(mtu) && qpn != 0;
  if (!ok) return Status::kInvalidArgument;
  i.lid = static_cast<std::uint16_t>(lid);
  i.qpn = static_cast<std::uint32_t>(qpn);
  i.psn = static_cast<std::uint32_t>(psn);
  i.mtu = static_cast<std::uint32_t>(mtu);
  i.qkey = static_cast<std::uint32_t>(qkey);
  i.memory = {addr, static_cast<std::uint32_t>(rkey), len};
  out = i;
  return Status::kOk;
}

std::uint32_t random_psn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffff;
}

}  // namespace unet::verbs
