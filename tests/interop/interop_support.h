// Shared by the interop device tests: the device and GID the tools use, a tool run as a child
// process (killed and reaped if a test leaves it running), and the unet side of a ping-pong with
// every wait bounded and every message counted.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "device_env.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/device.h"
#include "unet/verbs/gid.h"

extern char** environ;

namespace unet::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using core::ChannelId;
using core::Descriptor;
using core::Endpoint;

inline constexpr auto kWait = 30s;  // any one message, and the tool's exit

// The device the tool and the endpoint share, and the GID index (perftest's choice unless
// UNET_GID_INDEX forces one), which the tool needs as -g on RoCE.
struct Device {
  std::string name;
  std::uint32_t gid_index = 0;
};

inline Device choose_device() {
  Device d;
  d.name = device_name();
  if (d.name.empty()) d.name = verbs::device_names().at(0);
  auto ctx = verbs::Context::open(d.name);
  d.gid_index = verbs::select_gid(*ctx, 1, gid_index()).index;
  return d;
}

// The IPv4 address of the device, from its IPv4-mapped RoCE GID (what rdma_cm resolves to the
// device); "" when the chosen GID is not IPv4-mapped.
inline std::string device_ipv4(const Device& d) {
  auto ctx = verbs::Context::open(d.name);
  verbs::Gid g = verbs::select_gid(*ctx, 1, d.gid_index).gid;
  if (!g.is_ipv4_mapped()) return "";
  return std::to_string(g.raw[12]) + "." + std::to_string(g.raw[13]) + "." +
         std::to_string(g.raw[14]) + "." + std::to_string(g.raw[15]);
}

// A process this test started, its stdout and stderr in a file. Killed and reaped if the test
// leaves it running.
class Tool {
 public:
  explicit Tool(const std::vector<std::string>& args) {
    char path[] = "/tmp/unet-interop-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    out_path_ = path;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fd, STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
  }
  ~Tool() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!out_path_.empty()) unlink(out_path_.c_str());
  }
  Tool(const Tool&) = delete;
  Tool& operator=(const Tool&) = delete;

  bool started() const { return pid_ > 0; }
  // Its exit status, or -1 if it was killed, crashed or overstayed `timeout` (then killed).
  int wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    const auto deadline = Clock::now() + timeout;
    int st = 0;
    while (Clock::now() < deadline) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(10ms);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return -1;
  }
  std::string output() const {
    std::ifstream f(out_path_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  std::string out_path_;
};

inline core::EndpointConfig endpoint_config(const Device& d, std::uint32_t size) {
  core::EndpointConfig c;
  c.device = d.name;
  c.gid_index = d.gid_index;
  c.buffer_bytes = std::max<std::uint32_t>(size, 4096);
  c.buffers = 64;
  c.free_queue_depth = 32;
  c.send_queue_depth = 32;
  c.recv_queue_depth = 64;
  return c;
}

// The unet side of the ping-pong: one channel, every wait bounded, every message counted.
struct Side {
  Endpoint& ep;
  ChannelId ch;
  std::uint64_t sent = 0, received = 0;

  // Retries `attempt` while it reports back-pressure, letting the endpoint progress in between.
  template <class F>
  ::testing::AssertionResult retry(F attempt, const char* what) {
    const auto deadline = Clock::now() + kWait;
    for (;;) {
      Status s = attempt();
      if (s == Status::kOk) return ::testing::AssertionSuccess();
      if (s != Status::kNoResource) return ::testing::AssertionFailure() << what << ": " << s;
      if (ep.poll() < 0) return ::testing::AssertionFailure() << what << ": device error";
      if (Clock::now() > deadline)
        return ::testing::AssertionFailure() << what << ": still back-pressured";
    }
  }
  // Sends `bytes`: inside the descriptor when small, else from a segment buffer.
  ::testing::AssertionResult send(std::span<const std::byte> bytes) {
    const auto len = static_cast<std::uint32_t>(bytes.size());
    ::testing::AssertionResult r = ::testing::AssertionSuccess();
    if (len <= ep.inline_threshold()) {
      r = retry([&] { return ep.send_inline(ch, bytes); }, "send_inline");
    } else {
      core::BufferId b = core::kNoBuffer;
      r = retry([&] { return ep.acquire_buffer(b); }, "acquire_buffer");
      if (!r) return r;
      std::copy(bytes.begin(), bytes.end(), ep.buffer(b).begin());
      r = retry([&] { return ep.send(ch, b, len); }, "send");
    }
    if (r) ++sent;
    return r;
  }
  // Waits for the next arrival on our channel and copies it out.
  ::testing::AssertionResult receive(std::vector<std::byte>& out) {
    const auto deadline = Clock::now() + kWait;
    Descriptor d;
    for (std::uint32_t idle = 0;; ++idle) {
      if (ep.poll() < 0) return ::testing::AssertionFailure() << "device error while polling";
      if (ep.receive(d) == Status::kOk) break;
      if (idle % 1024 == 1023 && Clock::now() > deadline)
        return ::testing::AssertionFailure()
               << "no message " << received << " within " << kWait.count() << " s";
    }
    if (d.channel != ch) return ::testing::AssertionFailure() << "arrival on channel " << d.channel;
    std::span<const std::byte> in =
        d.is_inline() ? d.inline_payload()
                      : std::span<const std::byte>(ep.buffer(d.buffer).first(d.length));
    out.assign(in.begin(), in.end());
    if (!d.is_inline() && ep.release(d.buffer) != Status::kOk)
      return ::testing::AssertionFailure() << "release refused";
    ++received;
    return ::testing::AssertionSuccess();
  }
  // Polls until every queued send has been posted (send() only queues; poll() posts).
  ::testing::AssertionResult flush() {
    return retry([&] { return ep.stats().sent < sent ? Status::kNoResource : Status::kOk; },
                 "posting the last send");
  }
};

}  // namespace unet::test
