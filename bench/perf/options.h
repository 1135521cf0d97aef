// unet_perf's configuration: the flag values as given (RawFlags), the checked configuration they
// turn into (PerfConfig), and the settings line the client sends the server so both can tell that
// they run the same test. Nothing here touches a device, so the unit tests drive it from a table.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "test_table.h"
#include "unet/core/endpoint.h"
#include "unet/uam/credit_window.h"
#include "unet/uam/wire_header.h"
#include "unet/ulp/datagram_header.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::perf {

enum class OobKind : std::uint8_t { kUnet, kRcPingpong, kIbSendLat };

inline constexpr std::uint64_t kMaxSize = 8u << 20;         // perftest's MAX_SIZE, the top of -a
inline constexpr std::uint64_t kMinIterations = 5;          // perftest's MIN_ITER
inline constexpr std::uint64_t kMaxIterations = 100000000;  // perftest's MAX_ITER
inline constexpr std::uint32_t kMaxBatch = 64;              // below the send queue depth (128)
// am_*: one argument word (the message's index) rides with every active message, and a payload
// carries at most uam's 16-bit length; UD lowers the limit to the path MTU (sizing.h).
inline constexpr std::size_t kAmArgs = 1;
inline constexpr std::uint32_t kMaxAmPayload = uam::kMaxPayload;
inline constexpr std::uint32_t kDefaultAmWindow = uam::CreditWindow::kDefaultWindow;
inline constexpr std::uint32_t kMaxAmWindow = uam::CreditWindow::kMaxWindow;
static_assert(kMaxAmPayload <= kMaxSize, "am sizes are a subset of perftest's");
// dgram_lat: one datagram of up to ulp's 64 KiB (fragmented over UD, reassembled by the receiver).
inline constexpr std::uint32_t kMaxDgram = ulp::kMaxDatagram;
static_assert(kMaxDgram <= kMaxSize, "datagram sizes are a subset of perftest's");
// stream_*: the connection's send and receive buffers, ulp::StreamConfig's defaults. stream_bw's
// client relies on the send buffer being exactly this (ulp rounds up to a power of two) to tell
// when bytes were acknowledged (stream_tests.cc).
inline constexpr std::uint32_t kUlpStreamSendBuffer = ulp::StreamConfig{}.send_buffer;
inline constexpr std::uint32_t kUlpStreamRecvBuffer = ulp::StreamConfig{}.recv_buffer;
static_assert((kUlpStreamSendBuffer & (kUlpStreamSendBuffer - 1)) == 0, "ulp would round it up");

// The flag values exactly as the user gave them; nullopt = the flag was left at its default.
struct RawFlags {
  std::string test;
  std::string device;                           // -d
  std::int64_t ib_port = 1;                     // -i
  std::int64_t gid_index = -1;                  // -x (-1: choose like perftest)
  std::int64_t tcp_port = 18515;                // -p
  std::int64_t sl = 0;                          // -S
  std::int64_t traffic_class = 0;               // -T
  std::optional<std::int64_t> size;             // -s
  bool all_sizes = false;                       // -a
  std::optional<std::int64_t> iterations;       // -n
  std::string connection;                       // -c ("" = the test's own: RC, or UD for ulp's)
  std::optional<std::int64_t> inline_size;      // -I
  bool rdma_cm = false;                         // -R
  bool events = false;                          // -e
  std::string mode;                             // --mode ("" = the test's own)
  std::int64_t batch = 1;                       // --batch
  std::optional<std::int64_t> warmup;           // --warmup
  std::string json;                             // --json
  std::int64_t timeout_ms = 20000;              // --timeout_ms
  std::string oob = "unet";                     // --oob
  std::optional<std::int64_t> mtu;              // -m (--oob rc_pingpong / ib_send_lat only)
  std::optional<std::int64_t> window;           // --window (am_* only)
  std::optional<bool> coalesce;                 // --coalesce (am_* only)
  std::optional<bool> ring;                     // --ring (RC channels)
  std::optional<std::int64_t> ring_slots;       // --ring_slots (ring channels only)
  std::optional<std::int64_t> ring_slot_bytes;  // --ring_slot_bytes (ring channels only)
  bool limits = false;                          // --limits
  std::vector<std::string> hosts;               // positional arguments (0 = server, 1 = client)
};

struct PerfConfig {
  TestKind test = TestKind::kEpLat;
  std::string device;
  std::uint8_t ib_port = 1;
  std::optional<std::uint32_t> gid_index;
  std::uint16_t tcp_port = 18515;
  std::uint8_t sl = 0;               // service level (-S)
  std::uint8_t traffic_class = 0;    // GRH traffic class and rdma_cm type of service (-T)
  std::vector<std::uint32_t> sizes;  // one (-s) or 2 .. 8 MiB (-a; am_*: 2 .. the payload limit;
                                     // dgram_lat: 2 .. 64 KiB)
  bool all_sizes = false;
  bool default_size = false;        // -s and -a not given (am_bw over UD then runs the UD limit)
  std::uint64_t iterations = 1000;  // timed iterations per size
  std::uint64_t warmup = 0;         // untimed iterations before them
  core::Transport transport = core::Transport::kRc;
  core::Mode mode = core::Mode::kBaseLevel;
  std::optional<std::uint32_t> inline_size;  // nullopt: the endpoint's default
  bool rdma_cm = false;
  bool events = false;
  std::uint32_t batch = 1;
  std::string json_path;
  std::chrono::milliseconds timeout{20000};
  OobKind oob = OobKind::kUnet;
  std::uint32_t mtu = 0;  // --oob rc_pingpong / ib_send_lat: the tool's -m (0: the tool's default)
  std::uint32_t window = kDefaultAmWindow;  // am_*: uam's credit window per channel
  bool coalesce = true;                     // am_*: uam's Config::coalesce
  bool ring = true;              // RC: a ring channel (core's ChannelOptions::ring); else SEND only
  std::uint32_t ring_slots = 0;  // our ring's geometry (0: core's EndpointConfig default)
  std::uint32_t ring_slot_bytes = 0;
  bool limits = false;  // --limits: print the largest -s for this test and transport, and exit
  std::string host;     // "" = server

  bool is_client() const noexcept { return !host.empty(); }
  // The test's row (test_table.h) says: a latency table (either figure), or BW.
  bool is_latency() const noexcept { return test_info(test).figure != Figure::kBandwidth; }
  bool is_am() const noexcept { return test_info(test).family == Family::kActiveMessages; }
  // The user-level protocols (ulp_tests.h): DatagramEndpoint (UD) and StreamEndpoint (UD or RC).
  bool is_ulp() const noexcept { return test_info(test).family == Family::kUserLevel; }
};

std::string_view transport_name(core::Transport t) noexcept;  // "RC" / "UD"
std::string_view mode_name(core::Mode m) noexcept;            // "base" / "direct"

// am_* -a: powers of two from 2 below `limit`, then `limit` itself (the largest payload).
std::vector<std::uint32_t> am_sweep(std::uint32_t limit);

// Checks the flags and builds the configuration, or says (one sentence, naming the flag) why not.
std::variant<PerfConfig, std::string> make_config(const RawFlags& flags);

// The settings both sides must share, as one line (ends with '\n'):
//   "unet-perf/1 test=ep_lat size=2 iters=1000 transport=RC mode=base inline=default batch=1
//    warmup=100 cm=0 window=8 coalesce=1"
std::string settings_line(const PerfConfig& c);
// Compares the peer's settings line with ours. nullopt when they agree; otherwise one message
// naming the first setting that differs, the flag that sets it and both values. `peer_is_client`
// says which side the peer is (for the wording).
std::optional<std::string> compare_settings(const PerfConfig& mine, std::string_view peer_line,
                                            bool peer_is_client);

}  // namespace unet::perf
