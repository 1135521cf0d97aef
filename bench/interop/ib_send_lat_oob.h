// ib_send_lat_oob: a U-Net endpoint channel with an unmodified perftest `ib_send_lat` (Debian 12:
// perftest 4.5+0.17-1, which reports "Version: 6.06"), in plain mode (TCP) and with -R (rdma_cm).
// bench/interop/PERFTEST.md has the byte-level facts and how they were established; in short:
//
//   TCP, port 18515 (-p). The client writes first in every exchange, the server reads and answers.
//   1. version      16 bytes: the version string ("6.06"), NUL-padded. The tool exits if the
//                   peer's is below 5.70.
//   2. system data  4 bytes: page size ("cycle buffer"), big-endian; then 4 bytes: cache line
//                   size, big-endian. Each side keeps the larger of the two (its buffer layout).
//   3. MTU          2 bytes: the tool's MTU as the decimal ibv_mtu enum and a NUL ("3\0" = 1024;
//                   its port's active MTU unless -m). Both use the smaller of the two.
//   4. address      the QP's "LID:OUT_READS:QPN:PSN:RKEY:VADDR[:GID]:SRQN" line, NUL-terminated:
//                   with a GID (-x, or any RoCE port) "%04x:%04x:%06x:%06x:%08x:%016llx:" then
//                   the 16 GID bytes as "%02x:" each, then "%08x:" — 108 bytes; without a GID
//                   "%04x:%04x:%06x:%06x:%08x:%016llx:%08x" — 59 bytes. The reader picks the size
//                   from ITS OWN GID setting, so both sides must agree.
//   5. barriers     the same address line exchanged 3 more times before the run (in the tool's
//                   sources: when it prints the remote address, "after moving the QP to RTR",
//                   and after it posts its receives, so that the client's first SEND finds one).
//   6. run          -n ITERS messages of -s SIZE bytes each way: the client sends first, each
//                   side then alternates receive/send, ITERS sends and ITERS receives per side.
//                   No warm-up iterations, content not checked.
//   7. close        one more address-line exchange, then each side writes "done" and its NUL
//                   (5 bytes) and closes; the tool never reads the peer's "done" (this side
//                   reads the tool's before closing, so the tool's write never meets a reset).
// With -R (rdma_cm) there is no TCP at all: the exchange runs as SENDs on an RC "comm" connection
// made with rdma_cm to the same port, the data QP is a second rdma_cm connection to that port, and
// the address messages are the tool's binary struct (56 bytes, big-endian fields, see
// encode_perftest_dest). Order: comm connect; version, system data and MTU as above (same sizes);
// one address exchange; the data connection (the tool's server listens again, its client does
// not retry); one address exchange; the address exchange proper; 3 barriers; the run; one closing
// address exchange; no "done" (the tool then disconnects both connections).
// QP (RC): path MTU = the negotiated MTU, min_rnr_timer 12, timeout 14, retry_cnt 7, rnr_retry 7,
// max_dest_rd_atomic / max_rd_atomic = OUT_READS (1 for SEND), GRH with hop limit 255 when a GID
// is used.
//
//   core::Endpoint ep(cfg);                       // RC, buffer_bytes >= the message size
//   bench::IbSendLatOptions o;                    // host "" = be the server
//   o.host = "127.0.0.1";                         // -R: o.rdma_cm = true, host = the device's IP
//   bench::IbSendLatPeer peer = bench::connect_ib_send_lat(ep, o);
//   ... ITERS messages each way on peer.channel(), we send first as the client ...
//   peer.finish(timeout);   // the closing exchange (and "done")
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "unet/core/endpoint.h"
#include "unet/status.h"
#include "unet/verbs/gid.h"

namespace unet::verbs {
class OobListener;
class OobSocket;
}  // namespace unet::verbs

namespace unet::bench {

// One QP's address line.
struct PerftestAddress {
  std::uint16_t lid = 0;
  std::uint16_t out_reads = 1;
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
  verbs::Gid gid;  // only on the wire in GID mode
  std::uint32_t srqn = 0;

  bool operator==(const PerftestAddress&) const = default;
};

inline constexpr std::size_t kPerftestLineBytes = 59;      // without GID, NUL included
inline constexpr std::size_t kPerftestLineGidBytes = 108;  // with GID, NUL included
inline constexpr std::size_t kPerftestVersionBytes = 16;
inline constexpr std::uint16_t kPerftestDefaultPort = 18515;
// Address exchanges after the first one and before the run.
inline constexpr int kIbSendLatPreRunBarriers = 3;
inline constexpr std::size_t kPerftestDestBytes = 56;  // -R: the binary address struct

// The line the tool would write for `a` (59 or 108 bytes with the NUL). Throws verbs::Error
// (EINVAL) when QPN or PSN does not fit 24 bits.
std::string encode_perftest_address(const PerftestAddress& a, bool with_gid);

// Parses exactly one line of the tool's fixed format (59 or 108 bytes as `with_gid` says, hex
// digits of either case, NUL last). kOk and `out` filled, or kInvalidArgument, `out` untouched and
// *why (when given) naming the first thing wrong.
Status decode_perftest_address(std::span<const char> wire, bool with_gid, PerftestAddress& out,
                               const char** why = nullptr) noexcept;

// The 16-byte version field for `version` (at most 15 characters). Throws verbs::Error otherwise.
std::array<char, kPerftestVersionBytes> encode_perftest_version(std::string_view version);
// The peer's version: NUL-terminated within 16 bytes, "D.DD"-style (digits with one '.'), the
// rest NUL. kOk and `out` set, or kInvalidArgument.
Status decode_perftest_version(std::span<const char> wire, std::string& out) noexcept;

// The 2-byte MTU field: '1'..'5' (ibv_mtu 256..4096) and a NUL. Bytes <-> field; 0 = invalid.
std::array<char, 2> encode_perftest_mtu(std::uint32_t mtu_bytes);
std::uint32_t decode_perftest_mtu(std::span<const char> wire) noexcept;

// -R: the 56-byte binary address the tool SENDs on its comm connection: LID, OUT_READS, QPN, PSN,
// RKEY (4 bytes each, big-endian), 4 bytes of padding, VADDR (8, big-endian), the 16 GID bytes,
// SRQN and GID index (4 each, big-endian).
std::array<std::byte, kPerftestDestBytes> encode_perftest_dest(const PerftestAddress& a,
                                                               std::int32_t gid_index);
Status decode_perftest_dest(std::span<const std::byte> wire, PerftestAddress& out) noexcept;

struct IbSendLatOptions {
  std::string host;                           // "" = server (the tool is the client)
  std::uint16_t port = kPerftestDefaultPort;  // the tool's -p
  bool with_gid = true;                       // the tool's GID mode: always on RoCE; -x on IB
  std::uint32_t mtu = 0;                      // 0 = the port's active MTU, as the tool's default
  std::string version = "6.06";               // announced to the tool (it needs >= 5.70)
  std::chrono::milliseconds timeout{20000};   // bounds the whole set-up
  // Server only: accept on this listener (already listening) instead of opening one on `port`;
  // the tool's client connects once and does not retry. Not owned.
  verbs::OobListener* listener = nullptr;
  // -R: both connections through rdma_cm on `port`. `host` must then be an IP address of the
  // tool's RDMA device (client), and a server listens on `cm_bind` (an IP address of ours) unless
  // `cm_listening` says the caller already called ep.listen_cm() — needed when the tool is
  // started after the call, since its client does not retry.
  bool rdma_cm = false;
  std::string cm_bind = "0.0.0.0";
  bool cm_listening = false;
};

// A channel made with ib_send_lat, and the TCP connection its closing step needs.
class IbSendLatPeer {
 public:
  IbSendLatPeer(IbSendLatPeer&&) noexcept;
  IbSendLatPeer& operator=(IbSendLatPeer&&) noexcept;
  ~IbSendLatPeer();

  core::ChannelId channel() const noexcept { return channel_; }
  core::ChannelId comm_channel() const noexcept { return comm_; }  // -R only
  std::uint32_t path_mtu() const noexcept { return mtu_; }         // negotiated, bytes
  const std::string& peer_version() const noexcept { return peer_version_; }
  const PerftestAddress& peer_address() const noexcept { return peer_; }

  // After the run (ITERS messages each way): the closing exchange, and "done" in plain mode.
  // Throws verbs::Error on a timeout or a malformed reply. Call once.
  // -R: the tool then disconnects both rdma_cm connections and waits for each to complete: call
  // Endpoint::service_channels() until it has reported both closed (or close them yourself with
  // close_channel()) before waiting for the tool to exit.
  void finish(std::chrono::milliseconds timeout);

 private:
  friend IbSendLatPeer connect_ib_send_lat(core::Endpoint& ep, const IbSendLatOptions& o);
  IbSendLatPeer() = default;

  std::unique_ptr<verbs::OobSocket> sock_;  // plain mode
  core::Endpoint* ep_ = nullptr;            // -R: the comm channel is on the endpoint
  core::ChannelId comm_ = core::kNoChannel;
  bool client_ = false;
  bool with_gid_ = true;
  std::string line_;  // our address line, re-sent at every barrier
  core::ChannelId channel_ = core::kNoChannel;
  std::uint32_t mtu_ = 0;
  std::string peer_version_;
  PerftestAddress peer_;
};

// Runs steps 1-5 (plain, or -R with o.rdma_cm) with an ib_send_lat peer: on return the channel is
// ready and the tool is about to start its run (as the server it waits for our first message; as
// the client it sends first). Throws verbs::Error on a bad option, a timeout, a peer version
// below 5.70, a malformed field or an MTU the endpoint's port cannot carry.
IbSendLatPeer connect_ib_send_lat(core::Endpoint& ep, const IbSendLatOptions& o);

}  // namespace unet::bench
