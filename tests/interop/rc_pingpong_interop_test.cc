// Device: a U-Net endpoint and the real `ibv_rc_pingpong` (rdma-core, run as a child process) make
// a channel through bench::connect_rc_pingpong and ping-pong the tool's message pattern, both ways
// round. The unet side sends and receives exactly ITERS messages of SIZE bytes and checks every
// byte; with -c the tool, as server, checks the page markers of the last message it got from us.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "interop_support.h"
#include "rc_pingpong_oob.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::test {
namespace {

std::vector<std::string> tool_args(const Device& d, int port, std::uint32_t size,
                                   std::uint32_t iters, std::uint32_t mtu) {
  return {"ibv_rc_pingpong",
          "-d",
          d.name,
          "-g",
          std::to_string(d.gid_index),
          "-p",
          std::to_string(port),
          "-s",
          std::to_string(size),
          "-n",
          std::to_string(iters),
          "-m",
          std::to_string(mtu),
          "-c"};
}

// The tool's summary ("N bytes in S seconds = ..."), for the log.
void show_summary(const std::string& out) {
  std::size_t at = out.find(" bytes in ");
  if (at == std::string::npos) return;
  std::size_t begin = out.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::printf("ibv_rc_pingpong: %s\n", out.substr(begin, out.find('\n', at) - begin).c_str());
}

// Our message `it`: a pattern that changes with every message and byte, with the first byte of
// each page 0 as the tool's -c check wants it.
std::vector<std::byte> unet_message(std::uint32_t it, std::uint32_t size, std::size_t page) {
  std::vector<std::byte> m(size);
  for (std::size_t i = 0; i < size; ++i)
    m[i] = i % page == 0 ? std::byte{0} : static_cast<std::byte>(it * 131 + i * 7 + 1);
  return m;
}

std::size_t first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  if (a.size() != b.size()) return std::min(a.size(), b.size());
  return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
}

struct Case {
  std::uint32_t size;
  std::uint32_t iters;
  int port;  // the tool's server port (unet-server cases listen on a free port instead)
  std::uint32_t mtu = 1024;  // the tool's -m and the connector's path MTU
};

std::string case_name(const ::testing::TestParamInfo<Case>& p) {
  return "s" + std::to_string(p.param.size) + "_n" + std::to_string(p.param.iters) + "_m" +
         std::to_string(p.param.mtu);
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << "-s " << c.size << " -n " << c.iters << " -m " << c.mtu << " (port " << c.port << ")";
}

class RcPingpongInterop : public ::testing::TestWithParam<Case> {};

// The tool is the server; unet connects, sends first, and checks that every echo is its message.
// `corrupt_last` breaks the page marker of our last message: the tool must then complain.
void run_tool_server(const Case& c, bool corrupt_last) {
  const Device dev = choose_device();
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  Tool tool(tool_args(dev, c.port, c.size, c.iters, c.mtu));
  ASSERT_TRUE(tool.started()) << "could not start ibv_rc_pingpong (package ibverbs-utils)";

  Endpoint ep(endpoint_config(dev, c.size));
  bench::RcPingpongOptions o;
  o.host = "127.0.0.1";
  o.port = static_cast<std::uint16_t>(c.port);
  o.mtu = c.mtu;
  o.timeout = kWait;  // OobSocket::connect retries until the tool listens
  ChannelId ch = core::kNoChannel;
  try {
    ch = bench::connect_rc_pingpong(ep, o);
  } catch (const verbs::Error& e) {
    const int rc = tool.wait_exit(5s);
    FAIL() << e.what() << "\nibv_rc_pingpong exit status " << rc << ", output:\n" << tool.output();
  }

  Side side{ep, ch};
  std::vector<std::byte> echo;
  for (std::uint32_t it = 0; it < c.iters; ++it) {
    std::vector<std::byte> msg = unet_message(it, c.size, page);
    if (corrupt_last && it + 1 == c.iters) msg[0] = std::byte{0x55};
    ASSERT_TRUE(side.send(msg)) << "message " << it << "\n" << tool.output();
    ASSERT_TRUE(side.receive(echo)) << "\n" << tool.output();
    ASSERT_EQ(echo.size(), c.size) << "echo " << it;
    ASSERT_EQ(first_difference(echo, msg), msg.size()) << "echo " << it << " differs at this byte";
  }
  ASSERT_TRUE(side.flush());
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  show_summary(out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::to_string(2ull * c.size * c.iters) + " bytes in "), std::string::npos)
      << out;
  EXPECT_NE(out.find(std::to_string(c.iters) + " iters in "), std::string::npos) << out;
  if (corrupt_last)
    EXPECT_NE(out.find("invalid data in page 0"), std::string::npos)
        << "the tool's -c check missed it:\n"
        << out;
  else
    EXPECT_EQ(out.find("invalid data"), std::string::npos) << out;
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().sent, c.iters);
  EXPECT_EQ(ep.stats().received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
}

TEST_P(RcPingpongInterop, ToolServerUnetClient) {
  UNET_REQUIRE_DEVICE();
  run_tool_server(GetParam(), false);
}

// The tool is the client; unet listens, receives first and replies with its own pattern. The
// tool returns each reply in its next message, so message 0 must be the tool's initial content
// and message N our reply N-1.
TEST_P(RcPingpongInterop, UnetServerToolClient) {
  UNET_REQUIRE_DEVICE();
  const Case c = GetParam();
  const Device dev = choose_device();
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  Endpoint ep(endpoint_config(dev, c.size));
  verbs::OobListener listener("", 0);  // listening before the tool starts: it connects only once
  std::vector<std::string> args = tool_args(dev, listener.port(), c.size, c.iters, c.mtu);
  args.push_back("127.0.0.1");
  Tool tool(args);
  ASSERT_TRUE(tool.started()) << "could not start ibv_rc_pingpong (package ibverbs-utils)";

  bench::RcPingpongOptions o;
  o.listener = &listener;
  o.mtu = c.mtu;
  o.timeout = kWait;
  ChannelId ch = core::kNoChannel;
  try {
    ch = bench::connect_rc_pingpong(ep, o);
  } catch (const verbs::Error& e) {
    const int rc = tool.wait_exit(5s);
    FAIL() << e.what() << "\nibv_rc_pingpong exit status " << rc << ", output:\n" << tool.output();
  }

  Side side{ep, ch};
  std::vector<std::byte> expected(c.size), got;
  bench::fill_rc_pingpong_initial(expected, /*chk=*/true, page);
  for (std::uint32_t it = 0; it < c.iters; ++it) {
    ASSERT_TRUE(side.receive(got)) << "\n" << tool.output();
    ASSERT_EQ(got.size(), c.size) << "message " << it;
    ASSERT_EQ(first_difference(got, expected), expected.size())
        << "message " << it << " differs at this byte";
    expected = unet_message(it + 7, c.size, page);  // any content: the tool sends it back
    ASSERT_TRUE(side.send(expected)) << "reply " << it;
  }
  ASSERT_TRUE(side.flush());
  const int rc = tool.wait_exit(kWait);
  const std::string out = tool.output();
  show_summary(out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::to_string(2ull * c.size * c.iters) + " bytes in "), std::string::npos)
      << out;
  EXPECT_NE(out.find(std::to_string(c.iters) + " iters in "), std::string::npos) << out;
  EXPECT_EQ(side.sent, c.iters);
  EXPECT_EQ(side.received, c.iters);
  EXPECT_EQ(ep.stats().sent, c.iters);
  EXPECT_EQ(ep.stats().received, c.iters);
  EXPECT_EQ(ep.stats().send_errors, 0u);
  EXPECT_EQ(ep.stats().unknown_tag_drops, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RcPingpongInterop,
                         ::testing::Values(Case{4096, 200, 18531}, Case{64, 500, 18532},
                                           Case{4096, 100, 18534, 512}),
                         case_name);

// The tool's -c check really looks at our bytes: a wrong page marker in our last message is
// reported.
TEST(RcPingpongInteropCheck, ToolServerReportsACorruptedPageMarker) {
  UNET_REQUIRE_DEVICE();
  run_tool_server(Case{4096, 5, 18533}, true);
}

// A path MTU above the port's active MTU cannot match the tool (the endpoint never exceeds the
// port's): refused before anything goes on the wire.
TEST(RcPingpongInteropCheck, RefusesAPathMtuAboveThePorts) {
  UNET_REQUIRE_DEVICE();
  const Device dev = choose_device();
  Endpoint ep(endpoint_config(dev, 4096));
  auto ctx = verbs::Context::open(dev.name);
  const std::uint32_t active = ctx->port(1).active_mtu;
  if (active >= 4096) GTEST_SKIP() << "the port's active MTU is already 4096";
  bench::RcPingpongOptions o;
  o.host = "127.0.0.1";
  o.port = 9;  // never contacted
  o.mtu = 4096;
  try {
    (void)bench::connect_rc_pingpong(ep, o);
    ADD_FAILURE() << "-m 4096 accepted on a port with active MTU " << active;
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("active MTU " + std::to_string(active)), std::string::npos)
        << e.what();
  }
}

// A peer that is not the tool: a garbled 52-byte address is refused with a clear error, and
// nothing is left open.
TEST(RcPingpongInteropCheck, ServerRefusesAGarbledAddress) {
  UNET_REQUIRE_DEVICE();
  const Device dev = choose_device();
  Endpoint ep(endpoint_config(dev, 4096));
  verbs::OobListener listener("", 0);
  std::thread peer([port = listener.port()] {
    try {
      verbs::OobSocket s = verbs::OobSocket::connect("127.0.0.1", port, 10s);
      s.send_all(std::string("0000:00zz12:e9e184:00000000000000000000ffffc6120001") + '\0', 10s);
      char sink[64];
      s.recv_exact(sink, 10s);  // returns when the connector closes the socket
    } catch (const verbs::Error&) {
    }
  });
  bench::RcPingpongOptions o;
  o.listener = &listener;
  o.timeout = 10s;
  try {
    (void)bench::connect_rc_pingpong(ep, o);
    ADD_FAILURE() << "a garbled address was accepted";
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), EPROTO);
    EXPECT_NE(std::string(e.what()).find("QPN is not 6 hex digits"), std::string::npos) << e.what();
  }
  peer.join();
  EXPECT_EQ(ep.stats().sent, 0u);
}

}  // namespace
}  // namespace unet::test
