// ForkJob: a forked worker's side of the collectives (frames.h has the format).
#include "fork_job.h"

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "frames.h"
#include "unet/verbs/error.h"

namespace unet::boot::detail {

namespace {

using Clock = std::chrono::steady_clock;

// A worker waits this much longer than the run's timeout, so that a hang is reported by the
// parent, which can name the ranks that never joined.
constexpr std::chrono::milliseconds kParentFirst{2000};

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::chrono::milliseconds left(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return ms.count() > 0 ? ms : std::chrono::milliseconds(0);
}

}  // namespace

ForkJob::ForkJob(int rank, int size, int fd, std::chrono::milliseconds timeout)
    : Job(Launcher::kFork, rank, size, rank, size, host_name(), timeout), parent_(fd) {}

std::string ForkJob::collective(std::string_view op, std::string_view body,
                                const Progress& progress) {
  const std::uint64_t seq = ++seq_;
  const std::string what = std::string(op) + " #" + std::to_string(seq);
  const auto deadline = Clock::now() + timeout() + kParentFirst;
  const std::string late = "timed out after " + std::to_string(timeout().count() / 1000) + " s";
  try {
    std::string out = encode_header(op, seq, body.size());
    out += body;
    parent_.send_all(out, timeout());
    if (progress) {
      // Between calls of `progress`, a millisecond's wait for the answer: ranks waiting here must
      // leave the CPUs to the ranks they wait for.
      for (;;) {
        pollfd p{parent_.fd(), POLLIN, 0};
        if (::poll(&p, 1, 1) > 0) break;  // the answer, or the parent closed the socket
        if (Clock::now() > deadline) throw Error(late);
        progress();
      }
    }
    const FrameHeader h = decode_header(parent_.recv_line(left(deadline), kMaxHeader));
    if (h.op != "result" || h.seq != seq)
      throw Error("the parent answered '" + h.op + " " + std::to_string(h.seq) + "'");
    std::string result(h.bytes, '\0');
    parent_.recv_exact(result, left(deadline));
    return result;
  } catch (const verbs::Error& e) {  // the socket: the parent stopped the job, or timed out
    throw Error("fork launcher, " + what + ": " + (Clock::now() >= deadline ? late : e.what()));
  } catch (const Error& e) {
    throw Error("fork launcher, " + what + ": " + e.what());
  }
}

void ForkJob::barrier(const Progress& progress) { (void)collective("gather", {}, progress); }

std::vector<std::string> ForkJob::allgather(std::string_view mine) {
  return decode_list(collective("gather", mine, {}), static_cast<std::size_t>(size()));
}

std::vector<std::string> ForkJob::alltoall(const std::vector<std::string>& to_each) {
  if (to_each.size() != static_cast<std::size_t>(size()))
    throw std::invalid_argument("alltoall: " + std::to_string(to_each.size()) +
                                " entries for a job of " + std::to_string(size()));
  return decode_list(collective("alltoall", encode_list(to_each), {}),
                     static_cast<std::size_t>(size()));
}

void ForkJob::abort(int status, std::string_view message) noexcept {
  // The parent sees the status and stops the others.
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(nullptr);
  ::_exit(status == 0 ? 1 : status);
}

}  // namespace unet::boot::detail
