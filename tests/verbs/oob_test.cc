// Unit (no device): the out-of-band TCP exchange between two threads, and its timeouts.
#include "unet/verbs/oob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "unet/verbs/error.h"

namespace unet::verbs {
namespace {

using namespace std::chrono_literals;

ConnectionInfo info(std::uint32_t qpn) {
  ConnectionInfo i;
  i.qpn = qpn;
  i.psn = qpn + 1;
  i.mtu = 1024;
  i.gid = *Gid::from_hex("00000000000000000000ffff7f000001");
  return i;
}

TEST(Oob, ClientAndServerSwapConnectionInfo) {
  OobListener listener("127.0.0.1", 0);
  ASSERT_NE(listener.port(), 0);
  auto server = std::async(std::launch::async, [&] {
    OobSocket s = listener.accept(5s);
    return exchange_as_server(s, info(0x222), 5s);
  });
  OobSocket c = OobSocket::connect("127.0.0.1", listener.port(), 5s);
  ConnectionInfo from_server = exchange_as_client(c, info(0x111), 5s);
  EXPECT_EQ(from_server, info(0x222));
  EXPECT_EQ(server.get(), info(0x111));
}

TEST(Oob, ClientWaitsForALateServer) {
  std::uint16_t port;
  {
    OobListener probe("127.0.0.1", 0);
    port = probe.port();
  }  // a free port, closed again
  auto server = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    OobListener late("127.0.0.1", port);
    OobSocket s = late.accept(5s);
    return exchange_as_server(s, info(0x2), 5s);
  });
  OobSocket c = OobSocket::connect("127.0.0.1", port, 5s);
  EXPECT_EQ(exchange_as_client(c, info(0x1), 5s), info(0x2));
  EXPECT_EQ(server.get(), info(0x1));
}

TEST(Oob, ConnectToNothingTimesOutWithAClearError) {
  std::uint16_t port;
  {
    OobListener probe("127.0.0.1", 0);
    port = probe.port();
  }
  auto t0 = std::chrono::steady_clock::now();
  try {
    (void)OobSocket::connect("127.0.0.1", port, 300ms);
    FAIL() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_EQ(e.call(), "connect");
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(Oob, AcceptAndReceiveTimeOut) {
  OobListener listener("127.0.0.1", 0);
  EXPECT_THROW((void)listener.accept(100ms), Error);
  OobSocket c = OobSocket::connect("127.0.0.1", listener.port(), 1s);
  OobSocket s = listener.accept(1s);
  try {
    (void)exchange_as_server(s, info(1), 100ms);  // the client never writes
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.error_number(), ETIMEDOUT) << e.what();
  }
}

// Any timeout: none at all (down to Millis::min()) times out at once; Millis::max() waits for
// what comes instead of overflowing its deadline.
TEST(Oob, AnyTimeoutIsSafe) {
  OobListener listener("127.0.0.1", 0);
  for (const Millis t : {Millis::min(), Millis(-1), Millis(0)}) {
    try {
      (void)listener.accept(t);
      FAIL() << "accepted nobody";
    } catch (const Error& e) {
      EXPECT_EQ(e.error_number(), ETIMEDOUT) << e.what();
    }
  }
  auto server = std::async(std::launch::async, [&] {
    OobSocket s = listener.accept(Millis::max());
    return exchange_as_server(s, info(0x2), Millis::max());
  });
  OobSocket c = OobSocket::connect("127.0.0.1", listener.port(), Millis::max());
  EXPECT_EQ(exchange_as_client(c, info(0x1), Millis::max()), info(0x2));
  EXPECT_EQ(server.get(), info(0x1));
}

TEST(Oob, GarbageFromThePeerIsRefused) {
  OobListener listener("127.0.0.1", 0);
  OobSocket c = OobSocket::connect("127.0.0.1", listener.port(), 1s);
  OobSocket s = listener.accept(1s);
  c.send_all("hello there\n", 1s);
  try {
    (void)exchange_as_server(s, info(1), 1s);
    FAIL() << "garbage accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.error_number(), EPROTO) << e.what();
  }
  // An endless line is cut off at the limit instead of being buffered forever.
  OobSocket c2 = OobSocket::connect("127.0.0.1", listener.port(), 1s);
  OobSocket s2 = listener.accept(1s);
  c2.send_all(std::string(4096, 'x'), 1s);
  try {
    (void)exchange_as_server(s2, info(1), 1s);
    FAIL() << "endless line accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.error_number(), EMSGSIZE) << e.what();
  }
}

TEST(Oob, PeerClosingMidExchangeIsAnError) {
  OobListener listener("127.0.0.1", 0);
  auto client = std::async(std::launch::async, [&] {
    OobSocket c = OobSocket::connect("127.0.0.1", listener.port(), 1s);
    c.send_all("unet-oob/1 lid=", 1s);
  });  // closes after half a line
  OobSocket s = listener.accept(1s);
  client.get();
  try {
    (void)exchange_as_server(s, info(1), 1s);
    FAIL() << "half a line accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.error_number(), ECONNRESET) << e.what();
  }
}

}  // namespace
}  // namespace unet::verbs
