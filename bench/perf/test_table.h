// The tests of unet_perf, each once: one row of UNET_PERF_TESTS per test,
//   X(name, kind, family, figure, transport, mode, iterations, what)
//   name        --test NAME; the row's run function is run_NAME (round.h, ep_tests.cc, ...)
//   kind        its TestKind (the enum is made from the rows)
//   family      the endpoint it runs on: core's (base-level or direct-access), uam's or ulp's
//   figure      what its table reports
//   transport   -c when not given
//   mode        --mode when not given
//   iterations  -n when not given (perftest's defaults)
//   what        what it measures, the banner's first line
// Readers: TestKind and all_tests() below (options.cc: --test's checks and defaults; main.cc:
// --help, --list-tests; report.cc: the banner; bench/compare/compare.py through --list-tests), and
// the dispatch in main.cc, which calls the row's run_NAME. A list of macros rather than an array
// holding the run functions: options.cc and this table are compiled alone into the flag fuzzer
// (bench/fuzz/), which links none of the tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "unet/core/endpoint.h"

// clang-format off
#define UNET_PERF_TESTS(X)                                                                        \
  X(ep_lat, kEpLat, kEndpoint, kHalfRoundTrip, kRc, kBaseLevel, 1000,                             \
    "send/recv ping-pong through core::Endpoint")                                                 \
  X(ep_bw, kEpBw, kEndpoint, kBandwidth, kRc, kBaseLevel, 1000,                                   \
    "send/recv stream through core::Endpoint; a message counts when the server's credit for it "  \
    "arrives")                                                                                    \
  X(da_write_lat, kDaWriteLat, kDirectAccess, kHalfRoundTrip, kRc, kDirectAccess, 1000,           \
    "RDMA WRITE ping-pong into granted windows, each side polls its last byte")                   \
  X(da_write_bw, kDaWriteBw, kDirectAccess, kBandwidth, kRc, kDirectAccess, 5000,                 \
    "RDMA WRITE stream into a granted window; a message counts at its completion")                \
  X(da_read_lat, kDaReadLat, kDirectAccess, kRoundTrip, kRc, kDirectAccess, 1000,                 \
    "RDMA READ round trips from a granted window")                                                \
  X(am_lat, kAmLat, kActiveMessages, kHalfRoundTrip, kRc, kBaseLevel, 1000,                       \
    "active-message request/reply ping-pong through uam::Endpoint (the reply carries the same "   \
    "word and bytes)")                                                                            \
  X(am_bw, kAmBw, kActiveMessages, kBandwidth, kRc, kBaseLevel, 1000,                             \
    "active-message request stream through uam::Endpoint, no reply; a message counts when its "   \
    "implicit completion (the server's acknowledgement) arrives")                                 \
  X(dgram_lat, kDgramLat, kUserLevel, kHalfRoundTrip, kUd, kBaseLevel, 1000,                      \
    "datagram ping-pong through ulp::DatagramEndpoint (the server echoes each datagram)")         \
  X(stream_lat, kStreamLat, kUserLevel, kHalfRoundTrip, kUd, kBaseLevel, 1000,                    \
    "byte-stream ping-pong through ulp::StreamEndpoint (the server reads -s bytes and sends "     \
    "them back)")                                                                                 \
  X(stream_bw, kStreamBw, kUserLevel, kBandwidth, kUd, kBaseLevel, 1000,                          \
    "byte stream through ulp::StreamEndpoint; a message counts when the server's "                \
    "acknowledgement of it is known")
// clang-format on

namespace unet::perf {

#define UNET_PERF_KIND(name, kind, ...) kind,
enum class TestKind : std::uint8_t { UNET_PERF_TESTS(UNET_PERF_KIND) };
#undef UNET_PERF_KIND

enum class Family : std::uint8_t {
  kEndpoint,        // base-level send/recv through core::Endpoint (ep_tests.cc)
  kDirectAccess,    // RDMA WRITE and READ into granted windows (da_tests.cc)
  kActiveMessages,  // uam::Endpoint (am_tests.cc)
  kUserLevel,       // ulp's datagrams and byte stream (dgram_tests.cc, stream_tests.cc)
};

// What a test's table reports: half the round trip (one way), the full round trip (da_read_lat,
// as ib_read_lat), or perftest's BW columns.
enum class Figure : std::uint8_t { kHalfRoundTrip, kRoundTrip, kBandwidth };

struct TestInfo {
  std::string_view name;
  TestKind kind;
  Family family;
  Figure figure;
  core::Transport transport;
  core::Mode mode;
  std::uint64_t iterations;
  std::string_view what;
};

// Every row, in the table's order (all_tests()[k].kind == TestKind(k)).
std::span<const TestInfo> all_tests() noexcept;
const TestInfo& test_info(TestKind t) noexcept;
// The row named `name`, or nullptr.
const TestInfo* find_test(std::string_view name) noexcept;
// The names, in order, with `separator` between them.
std::string test_names(std::string_view separator);
// --test's --help text: the names by family, and where to find them one a line.
std::string test_help();

}  // namespace unet::perf
