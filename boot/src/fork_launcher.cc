// The fork launcher's parent: forks the workers, serves their collectives (frames.h), watches
// them, and turns their exit statuses into one.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

#include "fork_job.h"
#include "frames.h"
#include "launch_impl.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::boot::detail {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kSendTimeout{10000};  // one answer to a worker that is waiting for it

struct Child {
  pid_t pid = -1;
  std::optional<verbs::OobSocket> sock;
  std::string in;  // bytes read, not yet a whole frame
  bool eof = false;
  bool reaped = false;
  int status = 0;  // waitpid's
  // Its part of the collective being gathered, once sent.
  bool sent = false;
  std::string op, body;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

bool exited_ok(int status) {
  return WIFEXITED(status) && (WEXITSTATUS(status) == kExitOk || WEXITSTATUS(status) == kExitWrong);
}

class Parent {
 public:
  Parent(const LaunchConfig& cfg, std::vector<Child>& children) : cfg_(cfg), kids_(children) {}

  // Serves collectives until every worker has exited; false (with why()) on any failure.
  bool run() {
    const auto deadline = Clock::now() + cfg_.timeout;
    while (!all([](const Child& c) { return c.reaped; })) {
      if (Clock::now() > deadline)
        return fail("timed out after " + std::to_string(cfg_.timeout.count() / 1000) + " s" +
                    waiting());
      std::vector<pollfd> fds;
      std::vector<int> who;
      for (int r = 0; r < size(); ++r)
        if (!kids_[r].eof) {
          fds.push_back({kids_[r].sock->fd(), POLLIN, 0});
          who.push_back(r);
        }
      if (::poll(fds.data(), fds.size(), fds.empty() ? 20 : 100) < 0 && errno != EINTR)
        return fail("poll: " + std::string(strerror(errno)));
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents && !read_from(who[i])) return false;
      if (!reap_some()) return false;
    }
    return true;
  }

  const std::string& why() const { return why_; }

 private:
  int size() const { return static_cast<int>(kids_.size()); }
  template <class P>
  bool all(P pred) const {
    for (const auto& c : kids_)
      if (!pred(c)) return false;
    return true;
  }
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }
  // Who a timed-out run waits for: the ranks missing from a collective others joined, else the
  // ranks still running.
  std::string waiting() const {
    const bool joined = !all([](const Child& c) { return !c.sent; });
    std::string s;
    for (int r = 0; r < size(); ++r)
      if (joined ? !kids_[r].sent : !kids_[r].reaped)
        s += (s.empty() ? "" : ", ") + std::to_string(r);
    if (s.empty()) return s;
    return joined ? " (collective #" + std::to_string(seq_ + 1) + " waits for rank " + s + ")"
                  : " (still running: rank " + s + ")";
  }

  bool read_from(int r) {
    Child& c = kids_[r];
    char buf[65536];
    const ssize_t n = ::recv(c.sock->fd(), buf, sizeof buf, 0);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR ? true
                                               : fail("recv: " + std::string(strerror(errno)));
    if (n == 0) {
      c.eof = true;  // it exited or is exiting: reap_some() says how
      return true;
    }
    c.in.append(buf, static_cast<std::size_t>(n));
    for (;;) {
      const auto nl = c.in.find('\n');
      if (nl == std::string::npos) {
        if (c.in.size() > kMaxHeader)
          return fail("rank " + std::to_string(r) + " wrote an overlong header");
        return true;
      }
      FrameHeader h;
      try {
        h = decode_header(std::string_view(c.in).substr(0, nl));
      } catch (const std::exception& e) {
        return fail("rank " + std::to_string(r) + ": " + e.what());
      }
      if (c.in.size() - nl - 1 < h.bytes) return true;  // the body is not all in yet
      if (c.sent || h.seq != seq_ + 1 || (h.op != "gather" && h.op != "alltoall"))
        return fail("rank " + std::to_string(r) + " sent '" + h.op + " " + std::to_string(h.seq) +
                    "' out of turn (collective #" + std::to_string(seq_ + 1) +
                    " is being gathered)");
      c.sent = true;
      c.op = h.op;
      c.body = c.in.substr(nl + 1, h.bytes);
      c.in.erase(0, nl + 1 + h.bytes);
      if (all([](const Child& k) { return k.sent; }) && !answer()) return false;
    }
  }

  // Every worker sent its part of collective seq_ + 1: answer each.
  bool answer() {
    ++seq_;
    const std::string& op = kids_[0].op;
    for (int r = 1; r < size(); ++r)
      if (kids_[r].op != op)
        return fail("collective #" + std::to_string(seq_) + ": rank 0 called " + op + " but rank " +
                    std::to_string(r) + " called " + kids_[r].op);
    std::vector<std::string> parts(kids_.size());
    std::vector<std::vector<std::string>> lists;
    if (op == "gather") {
      for (int r = 0; r < size(); ++r) parts[r] = std::move(kids_[r].body);
    } else {
      lists.reserve(kids_.size());
      try {
        for (int r = 0; r < size(); ++r) lists.push_back(decode_list(kids_[r].body, kids_.size()));
      } catch (const std::exception& e) {
        return fail(std::string("alltoall #") + std::to_string(seq_) + ": " + e.what());
      }
    }
    const std::string gathered = op == "gather" ? encode_list(parts) : std::string();
    for (int to = 0; to < size(); ++to) {
      std::string body;
      if (op == "gather") {
        body = gathered;
      } else {
        for (int from = 0; from < size(); ++from) parts[from] = std::move(lists[from][to]);
        body = encode_list(parts);
      }
      kids_[to].sock->send_all(encode_header("result", seq_, body.size()) + body, kSendTimeout);
    }
    for (auto& c : kids_) {
      c.sent = false;
      c.body.clear();
    }
    return true;
  }

  // Reaps the workers that exited. One that failed, or left while others wait for it in a
  // collective, fails the job.
  bool reap_some() {
    for (int r = 0; r < size(); ++r) {
      Child& c = kids_[r];
      if (c.reaped || ::waitpid(c.pid, &c.status, WNOHANG) != c.pid) continue;
      c.reaped = true;
      if (!exited_ok(c.status)) return fail("rank " + std::to_string(r) + " " + describe(c.status));
    }
    // A collective that some have joined, and that a rank which exited never will.
    for (int r = 0; r < size(); ++r) {
      if (!kids_[r].reaped || kids_[r].sent) continue;
      for (int w = 0; w < size(); ++w)
        if (kids_[w].sent)
          return fail("rank " + std::to_string(r) + " " + describe(kids_[r].status) +
                      " while rank " + std::to_string(w) + " waits for it in collective #" +
                      std::to_string(seq_ + 1));
    }
    return true;
  }

  const LaunchConfig& cfg_;
  std::vector<Child>& kids_;
  std::uint64_t seq_ = 0;  // collectives answered
  std::string why_;
};

// Waits up to `grace` for the children to exit, then kills the rest; every child is reaped.
void reap_all(std::vector<Child>& kids, milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  for (;;) {
    bool left = false;
    for (auto& c : kids)
      if (!c.reaped) {
        if (::waitpid(c.pid, &c.status, WNOHANG) == c.pid)
          c.reaped = true;
        else
          left = true;
      }
    if (!left) return;
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  for (auto& c : kids)
    if (!c.reaped) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.reaped = true;
    }
}

// The worker's life after fork(): never returns.
[[noreturn]] void worker(const LaunchConfig& cfg, int rank, int fd, const Work& work) {
  int code = kExitError;
  try {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);  // OobSocket's timeouts need it
    ForkJob job(rank, cfg.procs, fd, cfg.timeout);
    code = work(job);
  } catch (const AgreedError& e) {  // every rank throws it: rank 0 says it for all
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), e.what());
    code = kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", cfg.program.c_str(), rank, e.what());
    code = kExitError;
  }
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace

int run_forked(const LaunchConfig& cfg, const Work& work) {
  if (cfg.procs < 1 || cfg.procs > kMaxForkedProcs)
    throw std::invalid_argument("procs must be 1.." + std::to_string(kMaxForkedProcs) +
                                " for the fork launcher, not " + std::to_string(cfg.procs));
  std::signal(SIGPIPE, SIG_IGN);  // a dead worker's socket must fail a write, not kill us
  std::fflush(nullptr);           // or the children would print our buffered output again
  const pid_t self = ::getpid();
  std::vector<Child> kids(cfg.procs);
  std::vector<int> child_ends(cfg.procs, -1);
  for (int r = 0; r < cfg.procs; ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      for (int k = 0; k < r; ++k) ::close(child_ends[k]);
      verbs::throw_error("socketpair", "fork launcher", errno);
    }
    kids[r].sock.emplace(sv[0]);
    child_ends[r] = sv[1];
  }
  for (int r = 0; r < cfg.procs; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "%s: fork: %s\n", cfg.program.c_str(), strerror(errno));
      for (int k = 0; k < cfg.procs; ++k) {
        if (k < r)
          ::kill(kids[k].pid, SIGKILL);
        else
          kids[k].reaped = true;  // never forked: nothing to reap
      }
      reap_all(kids, milliseconds(0));
      for (int k = 0; k < cfg.procs; ++k) ::close(child_ends[k]);
      return kExitError;
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // an orphaned worker must not linger
      if (::getppid() != self) ::_exit(kExitError);
      for (int k = 0; k < cfg.procs; ++k) {
        ::close(kids[k].sock->fd());
        if (k != r) ::close(child_ends[k]);
      }
      worker(cfg, r, child_ends[r], work);
    }
    kids[r].pid = pid;
  }
  for (int r = 0; r < cfg.procs; ++r) {
    ::close(child_ends[r]);
    ::fcntl(kids[r].sock->fd(), F_SETFL, O_NONBLOCK);
  }

  Parent parent(cfg, kids);
  bool ok = false;
  try {
    ok = parent.run();
  } catch (const std::exception& e) {  // an answer to a worker that died
    std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), e.what());
  }
  if (!ok) {
    if (!parent.why().empty())
      std::fprintf(stderr, "%s: %s; stopping the other ranks\n", cfg.program.c_str(),
                   parent.why().c_str());
    for (auto& c : kids)
      if (!c.reaped) ::kill(c.pid, SIGTERM);
    reap_all(kids, milliseconds(3000));
    return kExitError;
  }
  int code = kExitOk;
  for (int r = 0; r < cfg.procs; ++r)
    if (WEXITSTATUS(kids[r].status) == kExitWrong) code = kExitWrong;
  return code;
}

}  // namespace unet::boot::detail
