// Device: a U-Net endpoint and the real perftest `ib_send_lat` (run as a child process, plain
// TCP set-up) make a channel through bench::connect_ib_send_lat and run the tool's latency loop,
// both ways round: ITERS messages of SIZE bytes each way, the client first. The tool must exit 0
// and print its result row; the unet side counts exactly ITERS of each.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ib_send_lat_oob.h"
#include "interop_support.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::test {
namespace {

struct LatCase {
  std::uint32_t size;
  std::uint32_t iters;
  int port;  // the tool's server port (unet-server cases listen on a free port instead)
};

std::string lat_case_name(const ::testing::TestParamInfo<LatCase>& p) {
  return "s" + std::to_string(p.param.size) + "_n" + std::to_string(p.param.iters);
}

void PrintTo(const LatCase& c, std::ostream* os) {
  *os << "-s " << c.size << " -n " << c.iters << " (port " << c.port << ")";
}

std::vector<std::string> lat_args(const Device& d, int port, const LatCase& c) {
  return {"ib_send_lat",
          "-d",
          d.name,
          "-x",
          std::to_string(d.gid_index),
          "-p",
          std::to_string(port),
          "-s",
          std::to_string(c.size),
          "-n",
          std::to_string(c.iters),
          "-F"};
}

// The tool's result row: "<size> <iters> <t_min> ..." with a number, not "inf", for t_typical —
// unless the tool says its own clock calibration failed (under emulation its cycle-counter fit
// sometimes falls below r^2 0.9, and it then prints "inf" whatever the peer did).
::testing::AssertionResult has_result_row(const std::string& out, const LatCase& c, bool measured) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string bytes, iters, t_min, t_max, t_typical;
    if (!(f >> bytes >> iters >> t_min >> t_max >> t_typical)) continue;
    if (bytes != std::to_string(c.size) || iters != std::to_string(c.iters)) continue;
    const bool clock_failed =
        out.find("Correlation coefficient r^2") != std::string::npos && t_typical == "inf";
    const bool number = t_typical.find_first_not_of("0123456789.") == std::string::npos &&
                        t_typical.find('.') != std::string::npos;
    if (measured && !clock_failed && !number)
      return ::testing::AssertionFailure() << "t_typical is \"" << t_typical << "\" in:\n" << out;
    std::printf("ib_send_lat: %s\n", line.c_str());
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no result row in:\n" << out;
}

::testing::AssertionResult reports_mtu(const std::string& out, std::uint32_t mtu) {
  if (out.find("Mtu             : " + std::to_string(mtu) + "[B]") != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the tool does not report MTU " << mtu << ":\n" << out;
}

core::EndpointConfig lat_config(const Device& d, const LatCase& c) {
  core::EndpointConfig cfg = endpoint_config(d, c.size);
  cfg.free_queue_depth = 32;
  return cfg;
}

// Makes the channel with the tool; on failure reports why with the tool's exit status and output.
std::optional<bench::IbSendLatPeer> connect_with(Endpoint& ep, const bench::IbSendLatOptions& o,
                                                 Tool& tool) {
  try {
    return bench::connect_ib_send_lat(ep, o);
  } catch (const verbs::Error& e) {
    const int rc = tool.wait_exit(5s);
    ADD_FAILURE() << e.what() << "\nib_send_lat exit status " << rc << ", output:\n"
                  << tool.output();
    return std::nullopt;
  }
}

// ITERS messages of SIZE bytes each way, in the tool's order (its client sends first), then the
// closing exchange.
void run_and_close(Side& side, bench::IbSendLatPeer& peer, const LatCase& c, bool we_send_first,
                   Tool& tool) {
  std::vector<std::byte> msg(c.size,
                             std::byte{we_send_first ? std::uint8_t{0x5a} : std::uint8_t{0xa5}}),
      got;
  for (std::uint32_t it = 0; it < c.iters; ++it) {
    if (we_send_first) {
      ASSERT_TRUE(side.send(msg)) << "message " << it << "\n" << tool.output();
      ASSERT_TRUE(side.receive(got)) << "\n" << tool.output();
      ASSERT_EQ(got.size(), c.size) << "reply " << it;
    } else {
      ASSERT_TRUE(side.receive(got)) << "\n" << tool.output();
      ASSERT_EQ(got.size(), c.size) << "message " << it;
      ASSERT_TRUE(side.send(msg)) << "reply " << it;
    }
  }
  ASSERT_TRUE(side.flush());
  try {
    peer.finish(kWait);
  } catch (const verbs::Error& e) {
    ADD_FAILURE() << "closing exchange: " << e.what();
  }
}

class IbSendLatInterop : public ::testing::TestWithParam<LatCase> {};

// The tool is the server; unet connects, sends first and waits for each reply.
TEST_P(IbSendLatInterop, ToolServerUnetClient) {
  UNET_REQUIRE_DEVICE();
  const LatCase c = GetParam();
  const Device dev = choose_device();
  Tool tool(lat_args(dev, c.port, c));
  ASSERT_TRUE(tool.started()) << "could not start ib_send_lat (package perftest)";

  Endpoint ep(lat_config(dev, c));
  bench::IbSendLatOptions o;
  o.host = "127.0.0.1";
  o.port = static_cast<std::uint16_t>(c.port);
  o.timeout = kWait;
  std::optional<bench::IbSendLatPeer> peer = connect_with(ep, o, tool);
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->peer_version(), "6.06");

  Side side{ep, peer->channel()};
  ASSERT_NO_FATAL_FAILURE(run_and_close(side, *peer, c, /*we_send_first=*/true, tool));
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(has_result_row(out, c, /*measured=*/false));
  EXPECT_TRUE(reports_mtu(out, peer->path_mtu()));
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().sent, c.iters);
  EXPECT_EQ(ep.stats().received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
}

// The tool is the client (it measures); unet listens, receives first and answers each message.
TEST_P(IbSendLatInterop, UnetServerToolClient) {
  UNET_REQUIRE_DEVICE();
  const LatCase c = GetParam();
  const Device dev = choose_device();
  Endpoint ep(lat_config(dev, c));
  verbs::OobListener listener("", 0);  // before the tool starts: its client connects only once
  std::vector<std::string> args = lat_args(dev, listener.port(), c);
  args.push_back("127.0.0.1");
  Tool tool(args);
  ASSERT_TRUE(tool.started()) << "could not start ib_send_lat (package perftest)";

  bench::IbSendLatOptions o;
  o.listener = &listener;
  o.timeout = kWait;
  std::optional<bench::IbSendLatPeer> peer = connect_with(ep, o, tool);
  ASSERT_TRUE(peer);

  Side side{ep, peer->channel()};
  ASSERT_NO_FATAL_FAILURE(run_and_close(side, *peer, c, /*we_send_first=*/false, tool));
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(has_result_row(out, c, /*measured=*/true));
  EXPECT_TRUE(reports_mtu(out, peer->path_mtu()));
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().sent, c.iters);
  EXPECT_EQ(ep.stats().received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
}

// -R: the same runs with both connections made through rdma_cm (no TCP at all).
TEST_P(IbSendLatInterop, RdmaCmToolServerUnetClient) {
  UNET_REQUIRE_DEVICE();
  const LatCase c = GetParam();
  const Device dev = choose_device();
  const std::string ip = device_ipv4(dev);
  if (ip.empty()) GTEST_SKIP() << "the device's GID is not IPv4-mapped: no address for rdma_cm";
  std::vector<std::string> args = lat_args(dev, c.port + 10, c);
  args.push_back("-R");
  Tool tool(args);
  ASSERT_TRUE(tool.started()) << "could not start ib_send_lat (package perftest)";

  Endpoint ep(lat_config(dev, c));
  bench::IbSendLatOptions o;
  o.rdma_cm = true;
  o.host = ip;
  o.port = static_cast<std::uint16_t>(c.port + 10);
  o.timeout = kWait;
  std::optional<bench::IbSendLatPeer> peer = connect_with(ep, o, tool);
  ASSERT_TRUE(peer);
  EXPECT_NE(peer->comm_channel(), peer->channel());

  Side side{ep, peer->channel()};
  ASSERT_NO_FATAL_FAILURE(run_and_close(side, *peer, c, /*we_send_first=*/true, tool));
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Data ex. method : rdma_cm"), std::string::npos) << out;
  EXPECT_TRUE(has_result_row(out, c, /*measured=*/false));
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
}

TEST_P(IbSendLatInterop, RdmaCmUnetServerToolClient) {
  UNET_REQUIRE_DEVICE();
  const LatCase c = GetParam();
  const Device dev = choose_device();
  const std::string ip = device_ipv4(dev);
  if (ip.empty()) GTEST_SKIP() << "the device's GID is not IPv4-mapped: no address for rdma_cm";
  Endpoint ep(lat_config(dev, c));
  const std::uint16_t port =
      ep.listen_cm(ip, 0);  // before the tool starts: its client does not retry
  std::vector<std::string> args = lat_args(dev, port, c);
  args.push_back("-R");
  args.push_back(ip);
  Tool tool(args);
  ASSERT_TRUE(tool.started()) << "could not start ib_send_lat (package perftest)";

  bench::IbSendLatOptions o;
  o.rdma_cm = true;
  o.cm_listening = true;
  o.timeout = kWait;
  std::optional<bench::IbSendLatPeer> peer = connect_with(ep, o, tool);
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->peer_version(), "6.06");

  Side side{ep, peer->channel()};
  ASSERT_NO_FATAL_FAILURE(run_and_close(side, *peer, c, /*we_send_first=*/false, tool));
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
  // The tool's client now disconnects both its connections (the exchange's and the data one) and
  // waits for each to complete: the endpoint answers while it serves its channels.
  int closed = 0;
  for (auto end = std::chrono::steady_clock::now() + kWait;
       closed < 2 && std::chrono::steady_clock::now() < end;)
    closed += ep.service_channels();
  EXPECT_EQ(closed, 2) << "the tool's disconnects did not both arrive";
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Data ex. method : rdma_cm"), std::string::npos) << out;
  EXPECT_TRUE(has_result_row(out, c, /*measured=*/true));
}

INSTANTIATE_TEST_SUITE_P(Sizes, IbSendLatInterop,
                         ::testing::Values(LatCase{8, 1000, 18541}, LatCase{4096, 200, 18542}),
                         lat_case_name);

}  // namespace
}  // namespace unet::test
