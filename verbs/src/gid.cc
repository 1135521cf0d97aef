#include "unet/verbs/gid.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <cstdio>
#include <vector>

#include "unet/verbs/device.h"
#include "unet/verbs/error.h"

namespace unet::verbs {

bool Gid::is_zero() const noexcept {
  for (auto b : raw)
    if (b != 0) return false;
  return true;
}

bool Gid::is_ipv4_mapped() const noexcept {
  for (int i = 0; i < 10; ++i)
    if (raw[i] != 0) return false;
  return raw[10] == 0xff && raw[11] == 0xff;
}

std::string Gid::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (std::size_t i = 0; i < raw.size(); ++i) {
    s[2 * i] = kDigits[raw[i] >> 4];
    s[2 * i + 1] = kDigits[raw[i] & 0xf];
  }
  return s;
}

std::optional<Gid> Gid::from_hex(std::string_view hex) noexcept {
  if (hex.size() != 32) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Gid g;
  for (std::size_t i = 0; i < 16; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    g.raw[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return g;
}

std::string Gid::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, raw.data(), buf, sizeof buf);
  return buf;
}

Gid grh_source_gid(const std::uint8_t* grh) noexcept {
  const std::uint8_t* ip = grh + 20;
  bool ipv4 = false;
  if ((grh[0] >> 4) != 6) {
    ipv4 = (ip[0] >> 4) == 4;  // no IPv6 GRH here: an IPv4 header (rxe leaves its checksum 0)
  } else if (ip[0] == 0x45) {
    // Both readings are possible: believe IPv4 only if its header checksum is right.
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ipv4 = sum == 0xffff;
  }
  Gid g;
  if (ipv4) {
    g.raw[10] = g.raw[11] = 0xff;
    std::copy(ip + 12, ip + 16, g.raw.begin() + 12);
  } else {
    std::copy(grh + 8, grh + 24, g.raw.begin());
  }
  return g;
}

namespace {

GidType to_gid_type(std::uint32_t t) {
  switch (t) {
    case IBV_GID_TYPE_ROCE_V1:
      return GidType::kRoceV1;
    case IBV_GID_TYPE_ROCE_V2:
      return GidType::kRoceV2;
    default:
      return GidType::kIb;
  }
}

// perftest's preference: RoCE v2 + IPv4-mapped, then RoCE v2, then any valid GID.
int score(const GidEntry& e) {
  if (e.type == GidType::kRoceV2 && e.gid.is_ipv4_mapped()) return 3;
  if (e.type == GidType::kRoceV2) return 2;
  return 1;
}

}  // namespace

std::optional<GidEntry> choose_gid(const std::vector<GidRow>& table, std::uint8_t port,
                                   std::optional<std::uint32_t> index,
                                   std::optional<std::uint32_t> ifindex) {
  std::optional<GidEntry> best;
  for (const GidRow& r : table) {
    const GidEntry& e = r.entry;
    if (r.port != port || e.gid.is_zero() || (ifindex && r.ifindex != *ifindex)) continue;
    if (index) {
      if (e.index == *index) return e;
      continue;
    }
    if (!best || score(e) > score(*best) || (score(e) == score(*best) && e.index < best->index))
      best = e;
  }
  return best;
}

GidEntry select_gid(const Context& ctx, std::uint8_t port, std::optional<std::uint32_t> index,
                    std::string_view netdev) {
  const std::string object = ctx.name() + " port " + std::to_string(port);
  std::optional<std::uint32_t> ifindex;
  if (!netdev.empty()) {
    const unsigned i = ::if_nametoindex(std::string(netdev).c_str());
    if (i == 0)
      throw_error("select_gid", object, ENODEV, "no netdev named '" + std::string(netdev) + "'");
    ifindex = i;
  }
  // The table holds every port's entries: room for all of them.
  std::size_t rows = 0;
  for (std::uint8_t p = 1; p <= ctx.limits().phys_port_cnt; ++p)
    rows += std::max<std::uint32_t>(ctx.port(p).gid_table_len, 1);
  std::vector<ibv_gid_entry> raw(std::max<std::size_t>(rows, 1));
  const ssize_t n = ibv_query_gid_table(ctx.native(), raw.data(), raw.size(), 0);
  if (n < 0) throw_error("ibv_query_gid_table", object, static_cast<int>(-n));
  std::vector<GidRow> table;
  table.reserve(static_cast<std::size_t>(n));
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& t = raw[static_cast<std::size_t>(i)];
    GidRow r;
    std::copy(std::begin(t.gid.raw), std::end(t.gid.raw), r.entry.gid.raw.begin());
    r.entry.index = t.gid_index;
    r.entry.type = to_gid_type(t.gid_type);
    r.port = static_cast<std::uint8_t>(t.port_num);
    r.ifindex = t.ndev_ifindex;
    table.push_back(r);
  }
  if (std::optional<GidEntry> e = choose_gid(table, port, index, ifindex)) return *e;
  const std::string where = netdev.empty() ? "" : " on netdev " + std::string(netdev);
  if (index)
    throw_error("select_gid", object, ENOENT,
                "GID index " + std::to_string(*index) + " is absent or zero" + where);
  throw_error("select_gid", object, ENOENT, "no valid GID on this port" + where);
}

}  // namespace unet::verbs
