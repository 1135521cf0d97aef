// Unit: Progress (bench/perf/progress.h), the one wait of every unet_perf test family, driven by a
// scripted Driver: "no resource" is retried after progress, any other failure ends the wait at
// once naming the operation (which is not called again), and a wait that never ends times out
// naming what it awaited and the driver's note; progress a sleep made ends the wait before the
// periodic checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "progress.h"

namespace unet::perf {
namespace {

using namespace std::chrono_literals;

// Counts what Progress asks of it; poll() returns `poll_result`, sleep() `sleep_result`.
struct ScriptedDriver {
  int* polls;
  int* sleeps;
  int poll_result = 0;
  Status sleep_result = Status::kOk;
  int poll() noexcept { return ++*polls, poll_result; }
  Status arm() noexcept { return Status::kOk; }
  Status sleep(std::chrono::milliseconds) noexcept { return ++*sleeps, sleep_result; }
  void check(const char*) const noexcept {}
  std::string late() const { return " (scripted)"; }
};

class PerfProgress : public ::testing::Test {
 protected:
  PerfProgress() { cfg.timeout = 50ms; }
  Progress<ScriptedDriver> progress() {
    return Progress(ScriptedDriver{&polls, &sleeps}, cfg, core::CycleClock::process());
  }
  // The message of the PerfError `f` throws ("" when it throws none).
  template <class F>
  static std::string error_of(F f) {
    try {
      f();
    } catch (const PerfError& e) {
      return e.what();
    }
    return "";
  }
  PerfConfig cfg;
  int polls = 0, sleeps = 0;
};

TEST_F(PerfProgress, NoResourceIsRetriedAfterProgressUntilItSucceeds) {
  std::vector<Status> answers{Status::kNoResource, Status::kNoResource, Status::kNoResource,
                              Status::kOk};
  std::size_t calls = 0;
  auto p = progress();
  p.retry([&] { return answers[calls++]; }, "send");
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(polls, 3) << "one poll before each new attempt";
}

TEST_F(PerfProgress, AHardErrorFailsAtOnceNamingTheOperation) {
  for (bool events : {false, true}) {
    cfg.events = events;
    std::size_t calls = 0;
    auto p = progress();
    auto refused = [&] { return ++calls, Status::kRemoteAccessError; };
    const std::string msg = error_of([&] { p.retry(refused, "RDMA WRITE"); });
    EXPECT_EQ(msg, "RDMA WRITE failed: " + std::string(to_string(Status::kRemoteAccessError)));
    EXPECT_EQ(calls, 1u) << "a hard error is not tried again";
    EXPECT_EQ(polls, 0);
  }
}

TEST_F(PerfProgress, AHardErrorAfterNoResourceFailsAtOnce) {
  std::vector<Status> answers{Status::kNoResource, Status::kNotFound, Status::kOk};
  std::size_t calls = 0;
  auto p = progress();
  EXPECT_EQ(error_of([&] { p.retry([&] { return answers[calls++]; }, "request"); }),
            "request failed: " + std::string(to_string(Status::kNotFound)));
  EXPECT_EQ(calls, 2u);
}

TEST_F(PerfProgress, AWaitThatNeverEndsTimesOutNamingWhatItAwaited) {
  for (bool events : {false, true}) {
    cfg.events = events;
    auto p = progress();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(error_of([&] { p.until([] { return false; }, "echo from the server"); }),
              "no echo from the server within 50 ms (scripted)");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 45ms);
    EXPECT_EQ(sleeps > 0, events) << "-e sleeps between polls, polling does not";
  }
  // A retry that never gets its resource times out too, naming what it awaited.
  auto p = progress();
  EXPECT_EQ(error_of([&] {
              p.retry([] { return Status::kNoResource; }, "send_to", "room to send a datagram");
            }),
            "no room to send a datagram within 50 ms (scripted)");
}

TEST_F(PerfProgress, ADeviceErrorOrAFailedSleepEndsTheWait) {
  Progress broken(ScriptedDriver{&polls, &sleeps, -1}, cfg, core::CycleClock::process());
  EXPECT_EQ(error_of([&] { broken.until([] { return false; }, "credit from the server"); }),
            "device error while waiting for credit from the server");
  cfg.events = true;
  Progress sleepless(ScriptedDriver{&polls, &sleeps, 0, Status::kDeviceError}, cfg,
                     core::CycleClock::process());
  EXPECT_EQ(error_of([&] { sleepless.until([] { return false; }, "reply"); }),
            "reply failed: " + std::string(to_string(Status::kDeviceError)));
}

// A sleep that makes progress, as uam's wait() does (it polls, and a handler runs in there), and
// a check that fails once that progress is made, as the session check does when the client,
// answered in that sleep, has finished and said so.
struct ProgressInSleepDriver {
  bool* progressed;
  int poll() noexcept { return 0; }
  Status arm() noexcept { return Status::kOk; }
  Status sleep(std::chrono::milliseconds) noexcept { return *progressed = true, Status::kOk; }
  void check(const char* what) const {
    if (*progressed)
      throw PerfError(std::string("checked after the progress ") + what + " awaited");
  }
  std::string late() const { return ""; }
};

TEST_F(PerfProgress, WhatASleepDidEndsTheWaitBeforeTheChecks) {
  cfg.events = true;
  bool progressed = false;
  Progress p(ProgressInSleepDriver{&progressed}, cfg, core::CycleClock::process());
  EXPECT_EQ(error_of([&] { p.until([&] { return progressed; }, "the last request"); }), "");
  EXPECT_TRUE(progressed);
}

TEST_F(PerfProgress, PushBatchStopsAtNoResourceAndThrowsOnAHardError) {
  auto p = progress();
  std::vector<std::uint64_t> posted(8);
  std::uint64_t next = 0;
  // Room for 3: the batch of 5 ends there, the stamps of the measured ones (k >= 1) are set.
  auto room_for_3 = [&](std::uint64_t k) { return k < 3 ? Status::kOk : Status::kNoResource; };
  EXPECT_TRUE(push_batch(p, 5, next, 8, 1, posted, room_for_3, "send"));
  EXPECT_EQ(next, 3u);
  EXPECT_EQ(posted[0] != 0 && posted[1] != 0 && posted[2] == 0, true);
  EXPECT_FALSE(push_batch(p, 5, next, 8, 1, posted, room_for_3, "send")) << "no room: none";
  EXPECT_EQ(error_of([&] {
              (void)push_batch(
                  p, 5, next, 8, 1, posted, [](std::uint64_t) { return Status::kFlushed; }, "send");
            }),
            "send failed: " + std::string(to_string(Status::kFlushed)));
}

}  // namespace
}  // namespace unet::perf
