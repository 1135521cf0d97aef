// Device: the real unet_perf binary, as a server and a client process, for every test; rdma_cm,
// events, UD, a sweep, --json, a settings mismatch and an unreachable server. Each test uses its
// own TCP port. The client retries its connection until --timeout_ms, so the server is started
// first and the client right after it, with no sleep in between.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "device_env.h"
#include "json_check.h"

extern char** environ;

namespace unet::test {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A child process running unet_perf with its stdout and stderr in files.
class Perf {
 public:
  Perf(const std::string& name, std::vector<std::string> args) {
    const std::string dir = ::testing::TempDir();
    out_ = dir + "perf_" + name + ".out";
    err_ = dir + "perf_" + name + ".err";
    args.insert(args.begin(), UNET_PERF_PATH);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    spawned_ = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Perf() {
    if (spawned_ && !reaped_) {  // a test failed before waiting: do not leave it behind
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The exit status, or -1 if it did not end within `limit` (then it is killed).
  int wait(std::chrono::milliseconds limit = 150s) {
    if (!spawned_) return -2;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        return -1;
      }
      std::this_thread::sleep_for(20ms);
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

 private:
  pid_t pid_ = -1;
  bool spawned_ = false, reaped_ = false;
  std::string out_, err_;
};

// The device flags every process gets.
std::vector<std::string> with_device(std::vector<std::string> args, int port) {
  const std::string dev = device_name();
  if (!dev.empty()) args.insert(args.end(), {"-d", dev});
  if (auto g = gid_index()) args.insert(args.end(), {"-x", std::to_string(*g)});
  args.insert(args.end(), {"-p", std::to_string(port), "--timeout_ms", "20000"});
  return args;
}

// The rows of a table: lines whose first field is a number, split into numbers.
std::vector<std::vector<double>> rows(const std::string& out) {
  std::vector<std::vector<double>> result;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<double> row;
    std::string f;
    while (fields >> f) {
      char* end = nullptr;
      const double v = std::strtod(f.c_str(), &end);
      if (end == f.c_str() || *end != '\0') break;
      row.push_back(v);
    }
    if (!row.empty() && line.find_first_not_of(' ') != std::string::npos &&
        line[line.find_first_not_of(' ')] != '#')
      result.push_back(row);
  }
  return result;
}

struct Pair {
  int server = -2, client = -2;
  std::string server_out, server_err, client_out, client_err;
};

// Runs a server and a client with the same `args` (the client also gets `host`, and each its own
// extras), and waits for both.
Pair run_pair(const std::string& name, const std::vector<std::string>& args, int port,
              const std::string& host = "127.0.0.1", std::vector<std::string> server_extra = {},
              std::vector<std::string> client_extra = {}) {
  std::vector<std::string> s = with_device(args, port), c = with_device(args, port);
  s.insert(s.end(), server_extra.begin(), server_extra.end());
  c.insert(c.end(), client_extra.begin(), client_extra.end());
  c.push_back(host);
  Perf server(name + "_server", s);
  Perf client(name + "_client", c);
  Pair p;
  p.client = client.wait();
  p.server = server.wait(p.client == 0 ? 30s : 60s);
  p.server_out = server.out();
  p.server_err = server.err();
  p.client_out = client.out();
  p.client_err = client.err();
  return p;
}

std::string show(const Pair& p) {
  return "client exit " + std::to_string(p.client) + "\n--- client stdout\n" + p.client_out +
         "--- client stderr\n" + p.client_err + "--- server exit " + std::to_string(p.server) +
         "\n--- server stdout\n" + p.server_out + "--- server stderr\n" + p.server_err;
}

// Checks a latency row: bytes, iterations, then min <= typical <= max, avg within, 99% <= 99.9%.
void expect_latency_row(const std::vector<double>& r, double bytes, double iters) {
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(r[0], bytes);
  EXPECT_EQ(r[1], iters);
  const double min = r[2], max = r[3], typical = r[4], avg = r[5], stdev = r[6], p99 = r[7],
               p999 = r[8];
  EXPECT_GT(min, 0);
  EXPECT_LE(min, typical);
  EXPECT_LE(typical, max);
  EXPECT_LE(min, avg);
  EXPECT_LE(avg, max);
  EXPECT_GE(stdev, 0);
  EXPECT_LE(typical, p99 + 1e-9);
  EXPECT_LE(p99, p999 + 1e-9);
  EXPECT_LE(p999, max + 1e-9);
  EXPECT_LT(typical, 100000) << "a median over 0.1 s per message is not sane";
}

// Checks a BW row: bytes, iterations, peak >= average > 0, message rate consistent with them.
void expect_bw_row(const std::vector<double>& r, double bytes, double iters) {
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], bytes);
  EXPECT_EQ(r[1], iters);
  const double peak = r[2], avg = r[3], rate = r[4];
  EXPECT_GT(avg, 0);
  EXPECT_GE(peak + 0.01, avg);
  EXPECT_GT(rate, 0);
  EXPECT_NEAR(avg, rate * 1e6 * bytes / (1 << 20), 0.01 + avg * 0.01) << "BW = rate * size";
}

void expect_one_latency_run(const std::string& name, std::vector<std::string> args, int port,
                            double bytes, const std::string& host = "127.0.0.1") {
  Pair p = run_pair(name, args, port, host);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  expect_latency_row(r[0], bytes, 200);
  EXPECT_NE(p.client_out.find("warm-up iterations excluded"), std::string::npos) << show(p);
}

void expect_one_bw_run(const std::string& name, std::vector<std::string> args, int port,
                       double bytes) {
  Pair p = run_pair(name, args, port);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  expect_bw_row(r[0], bytes, 200);
}

std::string cm_address() {
  const char* a = std::getenv("UNET_RXE_ADDR0");
  return a ? a : "";
}

TEST(PerfProcess, EpLatRc) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat", {"--test", "ep_lat", "-s", "8", "-n", "200"}, 19101, 8);
}

TEST(PerfProcess, EpLatLargerThanInline) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_4k", {"--test", "ep_lat", "-s", "4096", "-n", "200"}, 19102, 4096);
}

TEST(PerfProcess, EpLatUd) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_ud", {"--test", "ep_lat", "-c", "UD", "-s", "8", "-n", "200"},
                         19103, 8);
}

TEST(PerfProcess, EpLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_e", {"--test", "ep_lat", "-e", "-s", "8", "-n", "200"}, 19104, 8);
}

TEST(PerfProcess, EpLatRdmaCm) {
  UNET_REQUIRE_DEVICE();
  if (cm_address().empty()) {
    if (device_required()) FAIL() << "UNET_RXE_ADDR0 (the device's IPv4 address) is not set";
    GTEST_SKIP() << "set UNET_RXE_ADDR0 to the IPv4 address of the RDMA device's netdev";
  }
  expect_one_latency_run("ep_lat_cm", {"--test", "ep_lat", "-R", "-s", "8", "-n", "200"}, 19105, 8,
                         cm_address());
}

TEST(PerfProcess, EpBw) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw", {"--test", "ep_bw", "-s", "64", "-n", "200"}, 19106, 64);
}

TEST(PerfProcess, EpBwBatchedBuffers) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw_batch", {"--test", "ep_bw", "-s", "8192", "-n", "200", "--batch", "8"},
                    19107, 8192);
}

TEST(PerfProcess, EpBwEventsUd) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw_ud", {"--test", "ep_bw", "-c", "UD", "-e", "-s", "512", "-n", "200"},
                    19108, 512);
}

TEST(PerfProcess, DaWriteLat) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_write_lat", {"--test", "da_write_lat", "-s", "8", "-n", "200"}, 19109,
                         8);
}

TEST(PerfProcess, DaWriteBw) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("da_write_bw",
                    {"--test", "da_write_bw", "-s", "65536", "-n", "200", "--batch", "4"}, 19110,
                    65536);
}

TEST(PerfProcess, DaReadLat) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_read_lat", {"--test", "da_read_lat", "-s", "64", "-n", "200"}, 19111,
                         64);
}

TEST(PerfProcess, DaReadLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_read_lat_e",
                         {"--test", "da_read_lat", "-e", "-s", "4096", "-n", "200"}, 19112, 4096);
}

TEST(PerfProcess, UdSweepSkipsSizesAboveTheMtuWithAReason) {
  UNET_REQUIRE_DEVICE();
  Pair p = run_pair("ep_lat_ud_all",
                    {"--test", "ep_lat", "-c", "UD", "-a", "-n", "5", "--warmup", "0"}, 19113);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_GE(r.size(), 8u) << show(p);  // 2 .. 256 at least: every path MTU is >= 256
  double expect = 2;
  for (const auto& row : r) {
    expect_latency_row(row, expect, 5);
    expect *= 2;
  }
  // Every size above the last one run is skipped, with the reason.
  std::size_t skipped = 0;
  for (std::size_t at = p.client_out.find("bytes skipped: "); at != std::string::npos;
       at = p.client_out.find("bytes skipped: ", at + 1))
    ++skipped;
  EXPECT_EQ(r.size() + skipped, 23u) << show(p);
  EXPECT_NE(p.client_out.find("exceed the UD path MTU"), std::string::npos) << show(p);
}

TEST(PerfProcess, JsonReportIsWrittenAndParses) {
  UNET_REQUIRE_DEVICE();
  const std::string path = ::testing::TempDir() + "perf_report.json";
  std::remove(path.c_str());
  Pair p = run_pair("json", {"--test", "ep_lat", "-s", "8", "-n", "200"}, 19114, "127.0.0.1", {},
                    {"--json", path});
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  const std::string text = read_file(path);
  JsonReader reader;
  auto doc = reader.parse(text);
  ASSERT_TRUE(doc.has_value()) << reader.error() << "\n" << text;
  const Json* results = doc->get("results");
  ASSERT_TRUE(results && results->array.size() == 1) << text;
  const Json& row = results->array[0];
  EXPECT_EQ(row.get("MsgSize")->number, 8);
  EXPECT_EQ(row.get("n_iterations")->number, 200);
  // The same median as the table.
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(row.get("t_typical")->number, r[0][4], 0.006);
  EXPECT_EQ(doc->get("config")->get("iterations")->number, 200);
  EXPECT_EQ(doc->get("config")->get("role")->string, "client");
  EXPECT_EQ(doc->get("test_info")->get("test")->string, "ep_lat");
}

TEST(PerfProcess, MismatchedSettingsEndBothSidesWithTheSettingNamed) {
  UNET_REQUIRE_DEVICE();
  Pair p = run_pair("mismatch", {"--test", "ep_lat", "-n", "200"}, 19115, "127.0.0.1", {"-s", "8"},
                    {"-s", "16"});
  EXPECT_EQ(p.client, 1) << show(p);
  EXPECT_EQ(p.server, 1) << show(p);
  const std::string msg = "settings differ: size (-s/-a)";
  EXPECT_NE(p.client_err.find(msg), std::string::npos) << show(p);
  EXPECT_NE(p.server_err.find(msg), std::string::npos) << show(p);
  EXPECT_NE(p.client_err.find("16 on the client"), std::string::npos) << show(p);
  EXPECT_TRUE(rows(p.client_out).empty());
}

TEST(PerfProcess, UnreachableServerFailsWithinTheTimeout) {
  UNET_REQUIRE_DEVICE();
  std::vector<std::string> args = with_device({"--test", "ep_lat"}, 19116);
  args.insert(args.end(), {"--timeout_ms", "2000", "127.0.0.1"});  // the later --timeout_ms wins
  const auto start = std::chrono::steady_clock::now();
  Perf client("unreachable", args);
  const int rc = client.wait(30s);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(rc, 1) << client.err();
  EXPECT_LT(took, 15s);
  EXPECT_NE(client.err().find("127.0.0.1:19116"), std::string::npos) << client.err();
}

TEST(PerfProcess, UnknownDeviceFailsAtOnce) {
  UNET_REQUIRE_DEVICE();
  Perf server("nodev", {"--test", "ep_lat", "-d", "no_such_dev0", "-p", "19117"});
  EXPECT_EQ(server.wait(30s), 1);
  EXPECT_NE(server.err().find("no_such_dev0"), std::string::npos) << server.err();
}

}  // namespace
}  // namespace unet::test
