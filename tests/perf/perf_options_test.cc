// Unit: unet_perf's flags -> configuration (a table of bad flag sets, each with its message), the
// defaults that follow perftest, and the settings line the client sends the server.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <variant>

#include "options.h"

namespace unet::perf {
namespace {

RawFlags flags(const std::string& test) {
  RawFlags f;
  f.test = test;
  return f;
}

PerfConfig ok(const RawFlags& f) {
  auto r = make_config(f);
  if (auto* e = std::get_if<std::string>(&r)) ADD_FAILURE() << "unexpected error: " << *e;
  return std::holds_alternative<PerfConfig>(r) ? std::get<PerfConfig>(r) : PerfConfig{};
}

struct BadCase {
  const char* name;
  std::function<void(RawFlags&)> edit;
  const char* message;  // a part of the error message
};

// gtest prints a parameter in test names and failures: its name, not its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class PerfBadFlags : public ::testing::TestWithParam<BadCase> {};

TEST_P(PerfBadFlags, EndsWithOneClearMessage) {
  RawFlags f = flags("ep_lat");
  GetParam().edit(f);
  auto r = make_config(f);
  ASSERT_TRUE(std::holds_alternative<std::string>(r)) << GetParam().name << " was accepted";
  EXPECT_NE(std::get<std::string>(r).find(GetParam().message), std::string::npos)
      << std::get<std::string>(r);
  EXPECT_EQ(std::get<std::string>(r).find('\n'), std::string::npos) << "one line";
}

const BadCase kBadCases[] = {
    {"no_test", [](RawFlags& f) { f.test = ""; }, "--test is required"},
    {"unknown_test", [](RawFlags& f) { f.test = "ep_latency"; }, "unknown --test 'ep_latency'"},
    {"two_hosts",
     [](RawFlags& f) {
       f.hosts = {"a", "b"};
     },
     "at most one host argument"},
    {"port_zero", [](RawFlags& f) { f.ib_port = 0; }, "-i 0 is out of range (1 .. 255)"},
    {"gid_negative", [](RawFlags& f) { f.gid_index = -2; }, "-x -2 is out of range"},
    {"sl_too_big", [](RawFlags& f) { f.sl = 16; }, "-S 16 is out of range (0 .. 15)"},
    {"tclass_too_big", [](RawFlags& f) { f.traffic_class = 256; },
     "-T 256 is out of range (0 .. 255)"},
    {"tcp_port_too_big", [](RawFlags& f) { f.tcp_port = 70000; },
     "-p 70000 is out of range (1 .. 65535)"},
    {"size_zero", [](RawFlags& f) { f.size = 0; }, "-s 0 is out of range (1 .. 8388608)"},
    {"size_over_limit", [](RawFlags& f) { f.size = 8388609; },
     "-s 8388609 is out of range (1 .. 8388608)"},
    {"all_and_size",
     [](RawFlags& f) {
       f.all_sizes = true;
       f.size = 8;
     },
     "-a runs every size"},
    {"too_few_iterations", [](RawFlags& f) { f.iterations = 4; },
     "-n 4 is out of range (5 .. 100000000)"},
    {"bad_transport", [](RawFlags& f) { f.connection = "UC"; }, "-c must be RC or UD, not 'UC'"},
    {"ud_direct",
     [](RawFlags& f) {
       f.test = "da_write_lat";
       f.connection = "UD";
     },
     "-c UD: da_write_lat needs RC"},
    {"ud_rdma_cm",
     [](RawFlags& f) {
       f.connection = "UD";
       f.rdma_cm = true;
     },
     "-R (rdma_cm) sets up RC channels only"},
    {"bad_mode", [](RawFlags& f) { f.mode = "fast"; }, "--mode must be base or direct, not 'fast'"},
    {"mode_mismatch", [](RawFlags& f) { f.mode = "direct"; },
     "--mode direct does not fit --test ep_lat, a base-level test"},
    {"mode_mismatch_da",
     [](RawFlags& f) {
       f.test = "da_read_lat";
       f.mode = "base";
     },
     "--mode base does not fit --test da_read_lat"},
    {"inline_too_big", [](RawFlags& f) { f.inline_size = 4097; },
     "-I 4097 is out of range (0 .. 4096)"},
    {"batch_zero",
     [](RawFlags& f) {
       f.test = "ep_bw";
       f.batch = 0;
     },
     "--batch 0 is out of range (1 .. 64)"},
    {"batch_for_latency", [](RawFlags& f) { f.batch = 4; },
     "--batch applies to the *_bw tests only"},
    {"warmup_negative", [](RawFlags& f) { f.warmup = -1; }, "--warmup -1 is out of range"},
    {"timeout_zero", [](RawFlags& f) { f.timeout_ms = 0; }, "--timeout_ms 0 is out of range"},
    {"events_write_lat",
     [](RawFlags& f) {
       f.test = "da_write_lat";
       f.events = true;
     },
     "-e is not available for da_write_lat"},
    {"events_write_bw",
     [](RawFlags& f) {
       f.test = "da_write_bw";
       f.events = true;
     },
     "-e is not available for da_write_bw"},
    {"oob_rc_pingpong_bw",
     [](RawFlags& f) {
       f.oob = "rc_pingpong";
       f.test = "ep_bw";
     },
     "--oob rc_pingpong runs --test ep_lat only"},
    {"oob_rc_pingpong_ud",
     [](RawFlags& f) {
       f.oob = "rc_pingpong";
       f.connection = "UD";
     },
     "--oob rc_pingpong is RC: drop -c UD"},
    {"oob_rc_pingpong_all",
     [](RawFlags& f) {
       f.oob = "rc_pingpong";
       f.all_sizes = true;
     },
     "--oob rc_pingpong runs one size"},
    {"oob_rc_pingpong_cm",
     [](RawFlags& f) {
       f.oob = "rc_pingpong";
       f.rdma_cm = true;
     },
     "drop -R"},
    {"oob_rc_pingpong_mtu",
     [](RawFlags& f) {
       f.oob = "rc_pingpong";
       f.mtu = 1000;
     },
     "-m must be 256, 512, 1024, 2048 or 4096 (the tool's -m)"},
    {"mtu_without_rc_pingpong", [](RawFlags& f) { f.mtu = 1024; },
     "-m sets the path MTU of --oob rc_pingpong or ib_send_lat only"},
    {"oob_ib_send_lat_bw",
     [](RawFlags& f) {
       f.oob = "ib_send_lat";
       f.test = "ep_bw";
     },
     "--oob ib_send_lat runs --test ep_lat only"},
    {"oob_unknown", [](RawFlags& f) { f.oob = "ssh"; },
     "--oob must be unet, rc_pingpong or ib_send_lat, not 'ssh'"},
    {"am_size_over_payload_limit",
     [](RawFlags& f) {
       f.test = "am_lat";
       f.size = 65536;
     },
     "-s 65536 is out of range (1 .. 65535) (an active message's payload)"},
    {"am_bw_size_zero",
     [](RawFlags& f) {
       f.test = "am_bw";
       f.size = 0;
     },
     "-s 0 is out of range (1 .. 65535)"},
    {"am_all_and_size",
     [](RawFlags& f) {
       f.test = "am_bw";
       f.all_sizes = true;
       f.size = 8;
     },
     "-a runs every size from 2 to 65535 bytes; drop -s"},
    {"am_direct_mode",
     [](RawFlags& f) {
       f.test = "am_lat";
       f.mode = "direct";
     },
     "--mode direct does not fit --test am_lat, a base-level test"},
    {"am_lat_batch",
     [](RawFlags& f) {
       f.test = "am_lat";
       f.batch = 8;
     },
     "--batch applies to the *_bw tests only"},
    {"am_ud_rdma_cm",
     [](RawFlags& f) {
       f.test = "am_lat";
       f.connection = "UD";
       f.rdma_cm = true;
     },
     "-R (rdma_cm) sets up RC channels only"},
    {"am_oob_tool",
     [](RawFlags& f) {
       f.test = "am_lat";
       f.oob = "ib_send_lat";
     },
     "--oob ib_send_lat runs --test ep_lat only"},
    {"window_for_ep_test", [](RawFlags& f) { f.window = 8; },
     "--window applies to the am_* tests only"},
    {"window_zero",
     [](RawFlags& f) {
       f.test = "am_bw";
       f.window = 0;
     },
     "--window 0 is out of range (1 .. 127)"},
    {"window_over_uam_limit",
     [](RawFlags& f) {
       f.test = "am_bw";
       f.window = 128;
     },
     "--window 128 is out of range (1 .. 127)"},
    // A ring's geometry: core's bounds, and only where there is a ring.
    {"ring_slots_not_power_of_two", [](RawFlags& f) { f.ring_slots = 48; },
     "--ring_slots must be a power of two in 2..16384, not 48"},
    {"ring_slot_bytes_odd", [](RawFlags& f) { f.ring_slot_bytes = 100; },
     "--ring_slot_bytes must be a multiple of 8 in 32..32768, not 100"},
    {"ring_geometry_noring",
     [](RawFlags& f) {
       f.ring = false;
       f.ring_slots = 16;
     },
     "they need -c RC and no --noring"},
    {"ring_geometry_ud",
     [](RawFlags& f) {
       f.connection = "UD";
       f.ring_slot_bytes = 512;
     },
     "they need -c RC and no --noring"},
    // ulp's datagrams run on UD only; the stream runs on UD unless -c RC, and -R needs RC.
    {"dgram_lat_rc",
     [](RawFlags& f) {
       f.test = "dgram_lat";
       f.connection = "RC";
     },
     "-c RC: dgram_lat runs on UD only"},
    {"dgram_lat_rdma_cm",
     [](RawFlags& f) {
       f.test = "dgram_lat";
       f.rdma_cm = true;
     },
     "-R (rdma_cm) sets up RC channels only; dgram_lat runs on a UD channel set up out of band: "
     "drop -R"},
    {"stream_lat_rdma_cm",
     [](RawFlags& f) {
       f.test = "stream_lat";
       f.rdma_cm = true;
     },
     "-R (rdma_cm) sets up RC channels only; stream_lat runs on a UD channel set up out of band "
     "unless "
     "-c RC: drop -R"},
    {"dgram_over_64k",
     [](RawFlags& f) {
       f.test = "dgram_lat";
       f.size = 65537;
     },
     "-s 65537 is out of range (1 .. 65536) (one ulp datagram)"},
    {"stream_bw_batch",
     [](RawFlags& f) {
       f.test = "stream_bw";
       f.batch = 4;
     },
     "--batch does not apply to stream_bw"},
    {"stream_window",
     [](RawFlags& f) {
       f.test = "stream_bw";
       f.window = 8;
     },
     "--window applies to the am_* tests only"},
    {"coalesce_for_ep_test", [](RawFlags& f) { f.coalesce = false; },
     "--coalesce applies to the am_* tests only"},
    {"stream_direct_mode",
     [](RawFlags& f) {
       f.test = "stream_lat";
       f.mode = "direct";
     },
     "--mode direct does not fit --test stream_lat, a base-level test"},  // stream_bw takes it
    {"stream_oob_tool",
     [](RawFlags& f) {
       f.test = "stream_lat";
       f.oob = "rc_pingpong";
     },
     "--oob rc_pingpong runs --test ep_lat only"},
};

INSTANTIATE_TEST_SUITE_P(Table, PerfBadFlags, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& i) {
                           return std::string(i.param.name);
                         });

// --test takes exactly the table's names (test_table.h); a refusal names them all.
TEST(PerfConfig, TestNamesAndDefaultsComeFromTheTable) {
  for (const TestInfo& t : all_tests()) {
    SCOPED_TRACE(std::string(t.name));
    PerfConfig c = ok(flags(std::string(t.name)));
    EXPECT_EQ(c.test, t.kind);
    EXPECT_EQ(c.transport, t.transport);
    EXPECT_EQ(c.mode, t.mode);
    EXPECT_EQ(c.iterations, t.iterations);
    EXPECT_EQ(c.is_latency(), t.figure != Figure::kBandwidth);
    EXPECT_EQ(c.is_am(), t.family == Family::kActiveMessages);
    EXPECT_EQ(c.is_ulp(), t.family == Family::kUserLevel);
    EXPECT_EQ(&test_info(t.kind), &t);
    EXPECT_EQ(find_test(t.name), &t);
  }
  EXPECT_EQ(find_test("ep_latency"), nullptr);
  for (const char* bad : {"", "ep_latency"}) {
    auto r = make_config(flags(bad));
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    for (const TestInfo& t : all_tests())
      EXPECT_NE(std::get<std::string>(r).find(t.name), std::string::npos)
          << t.name << " missing from: " << std::get<std::string>(r);
  }
}

TEST(PerfConfig, DefaultsFollowPerftest) {
  PerfConfig lat = ok(flags("ep_lat"));
  EXPECT_EQ(lat.sizes, std::vector<std::uint32_t>{2});
  EXPECT_EQ(lat.iterations, 1000u);
  EXPECT_EQ(lat.warmup, 100u);
  EXPECT_EQ(lat.tcp_port, 18515);
  EXPECT_EQ(lat.mode, core::Mode::kBaseLevel);
  EXPECT_EQ(lat.transport, core::Transport::kRc);
  EXPECT_FALSE(lat.gid_index.has_value());
  EXPECT_FALSE(lat.is_client());

  PerfConfig bw = ok(flags("ep_bw"));
  EXPECT_EQ(bw.sizes, std::vector<std::uint32_t>{65536});
  EXPECT_EQ(bw.iterations, 1000u);
  EXPECT_EQ(bw.warmup, 0u);

  PerfConfig wbw = ok(flags("da_write_bw"));
  EXPECT_EQ(wbw.iterations, 5000u);  // perftest's DEF_ITERS_WB
  EXPECT_EQ(wbw.mode, core::Mode::kDirectAccess);
}

TEST(PerfConfig, AmDefaultsFollowUcxPerftestAndUam) {
  PerfConfig lat = ok(flags("am_lat"));
  EXPECT_TRUE(lat.is_am());
  EXPECT_TRUE(lat.is_latency());
  EXPECT_EQ(lat.sizes, std::vector<std::uint32_t>{2});
  EXPECT_EQ(lat.warmup, 100u);
  EXPECT_EQ(lat.mode, core::Mode::kBaseLevel);
  EXPECT_EQ(lat.window, 8u);  // uam's default credit window
  EXPECT_TRUE(lat.default_size);

  PerfConfig bw = ok(flags("am_bw"));
  EXPECT_TRUE(bw.is_am());
  EXPECT_FALSE(bw.is_latency());
  EXPECT_EQ(bw.sizes,
            std::vector<std::uint32_t>{65535});  // the largest payload, near perftest's 64 KiB
  EXPECT_EQ(bw.warmup, 0u);
  EXPECT_TRUE(bw.default_size);

  RawFlags f = flags("am_bw");
  f.size = 64;
  f.window = 127;
  f.batch = 16;
  f.connection = "UD";
  f.events = true;
  PerfConfig given = ok(f);
  EXPECT_EQ(given.sizes, std::vector<std::uint32_t>{64});
  EXPECT_FALSE(given.default_size);
  EXPECT_EQ(given.window, 127u);
  EXPECT_TRUE(given.coalesce) << "uam's default";
  f.coalesce = false;
  EXPECT_FALSE(ok(f).coalesce);
  EXPECT_EQ(given.batch, 16u);
  EXPECT_EQ(given.transport, core::Transport::kUd);
  EXPECT_TRUE(given.events);
  EXPECT_FALSE(ok(flags("ep_lat")).is_am());
}

TEST(PerfConfig, UlpTestsDefaultToUdAndPerftestSizes) {
  for (const char* name : {"dgram_lat", "stream_lat", "stream_bw"}) {
    PerfConfig c = ok(flags(name));
    EXPECT_TRUE(c.is_ulp()) << name;
    EXPECT_FALSE(c.is_am()) << name;
    EXPECT_EQ(c.transport, core::Transport::kUd) << name << ": -c not given means UD";
    RawFlags ud = flags(name);
    ud.connection = "UD";
    EXPECT_EQ(ok(ud).transport, core::Transport::kUd) << name;
  }
  PerfConfig dgram = ok(flags("dgram_lat"));
  EXPECT_TRUE(dgram.is_latency());
  EXPECT_EQ(dgram.sizes, std::vector<std::uint32_t>{2});
  EXPECT_EQ(dgram.warmup, 100u);
  PerfConfig bw = ok(flags("stream_bw"));
  EXPECT_FALSE(bw.is_latency());
  EXPECT_EQ(bw.sizes, std::vector<std::uint32_t>{65536});
  EXPECT_EQ(bw.warmup, 0u);
  EXPECT_EQ(bw.mode, core::Mode::kBaseLevel);  // copied sends unless --mode direct (zero-copy)
  RawFlags zc = flags("stream_bw");
  zc.mode = "direct";
  EXPECT_EQ(ok(zc).mode, core::Mode::kDirectAccess);
  zc.mode = "base";
  EXPECT_EQ(ok(zc).mode, core::Mode::kBaseLevel);
  // The stream also runs over RC when asked (-c RC), with rdma_cm channels too (-R).
  RawFlags rc = flags("stream_lat");
  rc.connection = "RC";
  EXPECT_EQ(ok(rc).transport, core::Transport::kRc);
  rc.test = "stream_bw";
  rc.rdma_cm = true;
  EXPECT_EQ(ok(rc).transport, core::Transport::kRc);
  EXPECT_TRUE(ok(rc).rdma_cm);
  // The other tests keep RC as their default.
  EXPECT_EQ(ok(flags("ep_lat")).transport, core::Transport::kRc);
  EXPECT_EQ(ok(flags("am_bw")).transport, core::Transport::kRc);
  EXPECT_FALSE(ok(flags("am_bw")).is_ulp());
  // A datagram is at most 64 KiB: -a stops there; a stream sweeps perftest's 2 .. 8 MiB.
  RawFlags all = flags("dgram_lat");
  all.all_sizes = true;
  EXPECT_EQ(ok(all).sizes.back(), 65536u);
  EXPECT_EQ(ok(all).sizes.size(), 16u);
  all.test = "stream_lat";
  EXPECT_EQ(ok(all).sizes.back(), 8u << 20);
  RawFlags big = flags("dgram_lat");
  big.size = 65536;
  EXPECT_EQ(ok(big).sizes, std::vector<std::uint32_t>{65536});
  big.test = "stream_lat";
  big.size = 1 << 20;
  EXPECT_EQ(ok(big).sizes, std::vector<std::uint32_t>{1u << 20});
}

TEST(PerfConfig, AmSweepEndsAtTheLargestPayload) {
  RawFlags f = flags("am_lat");
  f.all_sizes = true;
  PerfConfig c = ok(f);
  ASSERT_EQ(c.sizes.size(), 16u);  // 2 .. 32768, then 65535
  EXPECT_EQ(c.sizes.front(), 2u);
  EXPECT_EQ(c.sizes[14], 32768u);
  EXPECT_EQ(c.sizes.back(), 65535u);
  EXPECT_FALSE(c.default_size);
  EXPECT_EQ(am_sweep(1000), (std::vector<std::uint32_t>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1000}));
  EXPECT_EQ(am_sweep(1024), (std::vector<std::uint32_t>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(am_sweep(2), std::vector<std::uint32_t>{2});
  EXPECT_EQ(am_sweep(1), std::vector<std::uint32_t>{1});
}

TEST(PerfConfig, LimitsNeedNoPeer) {
  RawFlags f = flags("am_bw");
  f.limits = true;
  EXPECT_TRUE(ok(f).limits);
  EXPECT_FALSE(ok(flags("am_bw")).limits);
}

TEST(PerfConfig, AllSizesArePowersOfTwoFrom2To8MiB) {
  RawFlags f = flags("ep_lat");
  f.all_sizes = true;
  PerfConfig c = ok(f);
  ASSERT_EQ(c.sizes.size(), 23u);
  EXPECT_EQ(c.sizes.front(), 2u);
  EXPECT_EQ(c.sizes.back(), 8u << 20);
  for (std::size_t i = 1; i < c.sizes.size(); ++i) EXPECT_EQ(c.sizes[i], 2 * c.sizes[i - 1]);
}

TEST(PerfConfig, GivenValuesAreKept) {
  RawFlags f = flags("da_read_lat");
  f.hosts = {"198.18.0.1"};
  f.gid_index = 1;
  f.sl = 3;
  f.traffic_class = 106;  // DSCP 26 (AF31), ECN 2
  f.size = 4096;
  f.iterations = 200;
  f.warmup = 0;
  f.events = true;
  f.mode = "direct";
  f.timeout_ms = 1500;
  PerfConfig c = ok(f);
  EXPECT_TRUE(c.is_client());
  EXPECT_EQ(c.host, "198.18.0.1");
  EXPECT_EQ(c.gid_index, 1u);
  EXPECT_EQ(c.sl, 3u);
  EXPECT_EQ(c.traffic_class, 106u);
  EXPECT_EQ(c.sizes, std::vector<std::uint32_t>{4096});
  EXPECT_EQ(c.iterations, 200u);
  EXPECT_EQ(c.warmup, 0u);
  EXPECT_TRUE(c.events);
  EXPECT_EQ(c.timeout.count(), 1500);
}

// --ring_slots / --ring_slot_bytes shape the ring (the other one takes core's default); neither
// given, core's EndpointConfig decides (0 here).
TEST(PerfConfig, RingGeometryIsKeptWithCoresDefaultForTheOtherHalf) {
  RawFlags f = flags("ep_lat");
  EXPECT_EQ(ok(f).ring_slots, 0u);
  f.ring_slot_bytes = 1024;
  PerfConfig c = ok(f);
  EXPECT_TRUE(c.ring);
  EXPECT_EQ(c.ring_slots, core::EndpointConfig{}.ring_slots);
  EXPECT_EQ(c.ring_slot_bytes, 1024u);
  f.ring_slots = 16;
  f.rdma_cm = true;  // rdma_cm channels have rings too
  c = ok(f);
  EXPECT_TRUE(c.ring);
  EXPECT_EQ(c.ring_slots, 16u);
}

TEST(PerfSettings, SameSettingsAgree) {
  RawFlags f = flags("ep_bw");
  f.batch = 8;
  PerfConfig server = ok(f);
  f.hosts = {"127.0.0.1"};
  f.events = true;  // how a side waits is its own business
  PerfConfig client = ok(f);
  const std::string line = settings_line(client);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.rfind("unet-perf/1 test=ep_bw size=65536 iters=1000 transport=RC mode=base", 0),
            0u)
      << line;
  EXPECT_EQ(compare_settings(server, line, /*peer_is_client=*/true), std::nullopt);
}

TEST(PerfSettings, ADifferenceIsNamedWithItsFlagAndBothValues) {
  RawFlags f = flags("ep_lat");
  f.size = 8;
  PerfConfig server = ok(f);
  f.size = 16;
  PerfConfig client = ok(f);
  auto diff = compare_settings(server, settings_line(client), /*peer_is_client=*/true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "settings differ: size (-s/-a) is 8 on the server but 16 on the client");

  f.size.reset();
  f.all_sizes = true;
  diff = compare_settings(ok(f), settings_line(server), /*peer_is_client=*/false);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "settings differ: size (-s/-a) is all on the client but 8 on the server");

  RawFlags g = flags("ep_lat");
  g.inline_size = 0;
  diff = compare_settings(ok(flags("ep_lat")), settings_line(ok(g)), true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("inline (-I) is default on the server but 0 on the client"),
            std::string::npos)
      << *diff;
}

TEST(PerfSettings, EveryCheckedSettingIsCompared) {
  const std::vector<std::pair<std::string, std::function<void(RawFlags&)>>> edits = {
      {"test", [](RawFlags& f) { f.test = "ep_bw"; }},
      {"iters", [](RawFlags& f) { f.iterations = 50; }},
      {"transport", [](RawFlags& f) { f.connection = "UD"; }},
      {"inline", [](RawFlags& f) { f.inline_size = 8; }},
      {"warmup", [](RawFlags& f) { f.warmup = 3; }},
      {"cm", [](RawFlags& f) { f.rdma_cm = true; }},
  };
  for (const auto& [key, edit] : edits) {
    RawFlags f = flags("ep_lat");
    edit(f);
    auto diff = compare_settings(ok(flags("ep_lat")), settings_line(ok(f)), true);
    ASSERT_TRUE(diff.has_value()) << key;
    EXPECT_EQ(diff->rfind("settings differ: " + key + " ", 0), 0u) << *diff;
  }
  // batch and mode follow the test, so compare two bw configurations for batch.
  RawFlags a = flags("ep_bw"), b = flags("ep_bw");
  b.batch = 2;
  auto diff = compare_settings(ok(a), settings_line(ok(b)), true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->rfind("settings differ: batch (--batch)", 0), 0u) << *diff;
  // window exists for the am tests only.
  RawFlags w = flags("am_bw");
  w.window = 4;
  diff = compare_settings(ok(flags("am_bw")), settings_line(ok(w)), true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "settings differ: window (--window) is 8 on the server but 4 on the client");
  RawFlags nc = flags("am_bw");
  nc.coalesce = false;
  diff = compare_settings(ok(flags("am_bw")), settings_line(ok(nc)), true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(*diff, "settings differ: coalesce (--coalesce) is 1 on the server but 0 on the client");
  // Another test of the same family is named as the test.
  diff = compare_settings(ok(flags("am_bw")), settings_line(ok(flags("am_lat"))), true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->rfind("settings differ: test (--test) is am_bw on the server but am_lat", 0), 0u)
      << *diff;
}

TEST(PerfSettings, AForeignPeerIsRecognized) {
  auto diff = compare_settings(ok(flags("ep_lat")), "0000:000011:000022:fe80::1\n", true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("not unet_perf"), std::string::npos) << *diff;
  diff = compare_settings(ok(flags("ep_lat")), "unet-perf/1 test=ep_lat size\n", true);
  ASSERT_TRUE(diff.has_value());
  EXPECT_NE(diff->find("malformed settings"), std::string::npos) << *diff;
}

}  // namespace
}  // namespace unet::perf
