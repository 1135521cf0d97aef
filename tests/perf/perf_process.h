// The real unet_perf binary as child processes, for the device tests (perf_process_test.cc,
// perf_am_process_test.cc, perf_ulp_process_test.cc): spawn a server and a client, wait with a
// limit, read their output and check the rows of its table.
#pragma once

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

extern char** environ;

namespace unet::test {

using namespace std::chrono_literals;

inline std::string read_file(const std::string& path) {
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
    std::string program = UNET_PERF_PATH;     // not inserted into args: GCC 12 -O2 then warns
    std::vector<char*> argv{program.data()};  // (array-bounds) when args is empty
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
  // Ends the process at once (SIGKILL), as a crash would.
  void kill_now() {
    if (spawned_ && !reaped_) kill(pid_, SIGKILL);
  }
  // Freezes the process (SIGSTOP): it keeps its sockets open but answers nothing, as a peer whose
  // datagrams are all lost. The destructor's SIGKILL still ends it.
  void stop_now() {
    if (spawned_ && !reaped_) kill(pid_, SIGSTOP);
  }
  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }

 private:
  pid_t pid_ = -1;
  bool spawned_ = false, reaped_ = false;
  std::string out_, err_;
};

// The device flags every process gets.
inline std::vector<std::string> with_device(std::vector<std::string> args, int port) {
  const std::string dev = device_name();
  if (!dev.empty()) args.insert(args.end(), {"-d", dev});
  if (auto g = gid_index()) args.insert(args.end(), {"-x", std::to_string(*g)});
  args.insert(args.end(), {"-p", std::to_string(port), "--timeout_ms", "20000"});
  return args;
}

// The rows of a table: lines whose first field is a number, split into numbers.
inline std::vector<std::vector<double>> rows(const std::string& out) {
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
inline Pair run_pair(const std::string& name, const std::vector<std::string>& args, int port,
                     const std::string& host = "127.0.0.1",
                     std::vector<std::string> server_extra = {},
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

inline std::string show(const Pair& p) {
  return "client exit " + std::to_string(p.client) + "\n--- client stdout\n" + p.client_out +
         "--- client stderr\n" + p.client_err + "--- server exit " + std::to_string(p.server) +
         "\n--- server stdout\n" + p.server_out + "--- server stderr\n" + p.server_err;
}

// Checks a latency row: bytes, iterations, then min <= typical <= max, avg within, 99% <= 99.9%.
inline void expect_latency_row(const std::vector<double>& r, double bytes, double iters) {
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
inline void expect_bw_row(const std::vector<double>& r, double bytes, double iters) {
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], bytes);
  EXPECT_EQ(r[1], iters);
  const double peak = r[2], avg = r[3], rate = r[4];
  EXPECT_GT(avg, 0);
  EXPECT_GE(peak + 0.01, avg);
  EXPECT_GT(rate, 0);
  EXPECT_NEAR(avg, rate * 1e6 * bytes / (1 << 20), 0.01 + avg * 0.01) << "BW = rate * size";
}

}  // namespace unet::test
