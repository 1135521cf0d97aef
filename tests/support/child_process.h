// ChildProcess: a peer program the test starts (posix_spawn: no copy of the test's pinned pages),
// talking to it over its stdin and stdout one line at a time, every read bounded by a timeout.
// The destructor kills (SIGKILL) and reaps a child that is still running, so a failed test leaves
// no process behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace unet::test {

class ChildProcess {
 public:
  // Starts argv[0] with `argv`; throws std::runtime_error when it cannot.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // The next line of its stdout, without the newline; empty optional on EOF or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Writes `line` (a newline is added when missing) to its stdin; false if it is gone.
  bool write_line(const std::string& line);
  // Sends `signal` to it.
  void kill(int signal) noexcept;
  // Waits up to `timeout` for it to end; its wait status, or empty if it is still running.
  std::optional<int> wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_;  // read past the last line returned
  bool reaped_ = false;
};

}  // namespace unet::test
