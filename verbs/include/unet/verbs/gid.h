// Gid: a 16-byte global identifier, and choosing the GID a port should use.
//
// GIDs are chosen the way perftest does: skip all-zero entries, prefer a RoCE v2 GID that is an
// IPv4-mapped address (::ffff:a.b.c.d), then any RoCE v2 GID, then anything else that is valid.
// An explicit index overrides the choice (and is checked to exist and be non-zero).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace unet::verbs {

class Context;

// A GID, its 16 bytes in wire (network) order.
struct Gid {
  std::array<std::uint8_t, 16> raw{};

  // All 16 bytes zero (an empty GID table slot).
  bool is_zero() const noexcept;
  bool is_ipv4_mapped() const noexcept;  // ::ffff:a.b.c.d
  bool operator==(const Gid&) const = default;

  // 32 lowercase hex digits, the bytes in wire order (rdma-core's "wire GID" text format,
  // as ibv_rc_pingpong exchanges it).
  std::string to_hex() const;
  // Inverse of to_hex(); nullopt unless `hex` is exactly 32 hex digits.
  static std::optional<Gid> from_hex(std::string_view hex) noexcept;
  // Human form: "::ffff:198.18.0.1" for IPv4-mapped GIDs, else colon-separated IPv6.
  std::string to_string() const;
};

// A GID table entry's type: IB, RoCE v1, or RoCE v2.
enum class GidType : std::uint8_t { kIb, kRoceV1, kRoceV2 };

// One entry of a port's GID table: the GID, its index and its type.
struct GidEntry {
  Gid gid;
  std::uint32_t index = 0;
  GidType type = GidType::kIb;
};

// The sender's GID from the 40 bytes a UD receive places before the payload. On RoCE v2 over
// IPv4 those bytes hold an IPv4 header at offset 20 and the GID is its source address,
// IPv4-mapped; otherwise they are an IB/IPv6 GRH and the GID is its source GID field. As in
// libibverbs: with no IPv6 version nibble in byte 0, an IPv4 version nibble at offset 20 decides
// (rxe leaves that header's checksum 0); when byte 0 says IPv6, IPv4 wins only with a valid
// header checksum.
Gid grh_source_gid(const std::uint8_t* grh) noexcept;

// One row of a device's GID table: the entry, its port, and the ifindex of the netdev it belongs
// to (RoCE: a VLAN interface such as eth0.100 has its own; 0 on IB).
struct GidRow {
  GidEntry entry;
  std::uint8_t port = 1;
  std::uint32_t ifindex = 0;
};

// The choice select_gid() makes, from a table read already. Rows of other ports, zero GIDs and,
// when `ifindex` is set, rows of other netdevs are skipped. With `index` set, that row or nothing;
// otherwise the perftest-style best, the lowest index on a tie. Pure.
std::optional<GidEntry> choose_gid(const std::vector<GidRow>& table, std::uint8_t port,
                                   std::optional<std::uint32_t> index,
                                   std::optional<std::uint32_t> ifindex);

// The GID `port` of `ctx` should use. With `index` set, that entry (or Error if it is absent or
// zero); otherwise the perftest-style choice above. With `netdev` set ("eth0.100"), only its GIDs
// count: on a multi-port or VLAN host the two ends then pick GIDs that reach each other. Throws
// Error when the port (or the netdev) has no usable GID, or the netdev does not exist.
GidEntry select_gid(const Context& ctx, std::uint8_t port, std::optional<std::uint32_t> index = {},
                    std::string_view netdev = {});

}  // namespace unet::verbs
