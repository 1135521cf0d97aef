#include "launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "page_buffer.h"
#include "unet/uam/credit_window.h"
#include "unet/verbs/device.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::uam::examples {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The mesh's receive-buffer budget (uam/endpoint.h): each channel needs 2W + ceil(W/2) + 2 posted
// buffers, and an eighth of the free queue (at most 32) may wait to be reposted.
constexpr std::uint32_t kFreeQueueDepth = 256;
constexpr std::uint32_t kWindow = CreditWindow::kDefaultWindow;
constexpr std::uint32_t kPerChannel = 2 * kWindow + (kWindow + 1) / 2 + 2;
static_assert((kMaxProcs - 1) * kPerChannel + std::min<std::uint32_t>(kFreeQueueDepth / 8, 32) <=
                  kFreeQueueDepth,
              "the free queue cannot carry a full mesh of kMaxProcs");
constexpr milliseconds kLineTimeout{10000};  // one line between a worker and the parent
constexpr std::size_t kMaxLine = 512;

// Empty when the device the workers will open is present; otherwise why not.
std::string missing_device(const std::string& want) {
  const auto names = verbs::device_names();
  if (names.empty()) return "no RDMA device (ibv_get_device_list found none)";
  if (want.empty()) return {};
  for (const auto& n : names)
    if (n == want) return {};
  return "device " + want + " is not present";
}

// --- the worker side ---

// True when the parent has written something we have not read.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// --stats: one line of the endpoint's counters (uam, core, registration cache).
void print_stats(const std::string& program, int rank, Endpoint& ep) {
  const Stats& s = ep.stats();
  const core::EndpointStats& c = ep.net().stats();
  const core::RegistrationCacheStats r = ep.net().registration_stats();
  std::fprintf(stderr,
               "%s: rank %d: uam: %" PRIu64 " requests, %" PRIu64 " replies, %" PRIu64
               " stores, %" PRIu64 " gets sent; %" PRIu64 " handled; %" PRIu64
               " credit messages, %" PRIu64 " probes; core: %" PRIu64 " sent, %" PRIu64
               " received, %" PRIu64 " doorbells; registration cache: %" PRIu64 " hits, %" PRIu64
               " misses, %" PRIu64 " evictions, peak %.1f MiB pinned\n",
               program.c_str(), rank, s.requests_sent, s.replies_sent, s.stores_sent, s.gets_issued,
               s.requests_handled, s.credit_messages, s.probes, c.sent, c.received, c.doorbells,
               r.hits, r.misses, r.evictions, double(r.peak_pinned_bytes) / (1 << 20));
}

int worker(const LaunchConfig& cfg, int rank, int fd, const Work& work) {
  verbs::OobSocket parent(fd);
  try {
    Endpoint ep(cfg.net, cfg.am);
    // Our halves, one per peer, to the parent: "<peer> <offer>".
    std::vector<std::optional<core::ChannelOffer>> offers(cfg.procs);
    std::string out;
    for (int peer = 0; peer < cfg.procs; ++peer) {
      if (peer == rank) continue;
      offers[peer] = ep.offer_channel();
      out += std::to_string(peer) + ' ' + offers[peer]->local;  // the offer ends with '\n'
    }
    parent.send_all(out, kLineTimeout);
    // The peers' halves, from the parent: "<peer> <offer>".
    std::vector<ChannelId> channels(cfg.procs, core::kNoChannel);
    for (int i = 0; i + 1 < cfg.procs; ++i) {
      const std::string line = parent.recv_line(cfg.timeout, kMaxLine);
      const int peer = std::atoi(line.c_str());
      const auto space = line.find(' ');
      if (space == std::string::npos || peer < 0 || peer >= cfg.procs || peer == rank ||
          !offers[peer] || channels[peer] != core::kNoChannel)
        throw std::runtime_error("bad channel offer from the launcher: '" + line + "'");
      channels[peer] = ep.accept_offer(*offers[peer], std::string_view(line).substr(space + 1));
    }
    parent.send_all("ready\n", kLineTimeout);
    if (parent.recv_line(cfg.timeout, kMaxLine) != "go")
      throw std::runtime_error("the launcher did not say go");

    Group group(ep, rank, std::move(channels), cfg.timeout);
    const int code = work(group);
    group.quiesce();
    if (cfg.print_stats) print_stats(cfg.program, rank, ep);
    std::fflush(stdout);
    parent.send_all("done " + std::to_string(code) + "\n", kLineTimeout);
    // Peers may still wait for our acks: serve them until every worker is done.
    group.wait_until([&] { return readable(parent.fd()); }, "the other workers to finish");
    if (parent.recv_line(kLineTimeout, kMaxLine) != "exit")
      throw std::runtime_error("the launcher did not say exit");
    return code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", cfg.program.c_str(), rank, e.what());
    return kExitError;
  }
}

// --- the parent side ---

struct Child {
  pid_t pid = -1;
  std::optional<verbs::OobSocket> sock;
  std::string in;  // bytes read, not yet a whole line
  bool eof = false;
  int offers = 0;
  bool ready = false;
  bool done = false;
  bool reaped = false;
  int status = 0;  // waitpid's
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

class Parent {
 public:
  Parent(const LaunchConfig& cfg, std::vector<Child>& children)
      : cfg_(cfg), kids_(children), offers_(cfg.procs, std::vector<std::string>(cfg.procs)) {}

  // Runs the protocol until every worker is done; false (with why()) on any failure or timeout.
  bool run() {
    const auto deadline = Clock::now() + cfg_.timeout;
    while (!all([](const Child& c) { return c.done; })) {
      if (Clock::now() > deadline)
        return fail("timed out after " + std::to_string(cfg_.timeout.count() / 1000) + " s" +
                    waiting_for());
      std::vector<pollfd> fds;
      std::vector<int> who;
      for (int r = 0; r < cfg_.procs; ++r)
        if (!kids_[r].eof) {
          fds.push_back({kids_[r].sock->fd(), POLLIN, 0});
          who.push_back(r);
        }
      if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR)
        return fail("poll: " + std::string(strerror(errno)));
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents && !read_from(who[i])) return false;
      if (!reap_some()) return false;
    }
    for (auto& c : kids_) c.sock->send_all("exit\n", kLineTimeout);
    return true;
  }

  const std::string& why() const { return why_; }

 private:
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
  std::string waiting_for() const {
    std::string s;
    for (int r = 0; r < cfg_.procs; ++r)
      if (!kids_[r].done) s += (s.empty() ? " (still running: rank " : ", ") + std::to_string(r);
    return s.empty() ? s : s + ")";
  }

  bool read_from(int r) {
    Child& c = kids_[r];
    char buf[4096];
    const ssize_t n = ::recv(c.sock->fd(), buf, sizeof buf, 0);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR ? true
                                               : fail("recv: " + std::string(strerror(errno)));
    if (n == 0) {
      c.eof = true;  // it exited or is exiting: reap_some() says how
      return true;
    }
    c.in.append(buf, static_cast<std::size_t>(n));
    for (auto nl = c.in.find('\n'); nl != std::string::npos; nl = c.in.find('\n')) {
      const std::string line = c.in.substr(0, nl);
      c.in.erase(0, nl + 1);
      if (!handle(r, line)) return false;
    }
    if (c.in.size() > kMaxLine)
      return fail("rank " + std::to_string(r) + " wrote an overlong line");
    return true;
  }

  bool handle(int r, const std::string& line) {
    Child& c = kids_[r];
    if (c.offers + 1 < cfg_.procs) {  // "<peer> <offer>"
      const int peer = std::atoi(line.c_str());
      const auto space = line.find(' ');
      if (space == std::string::npos || peer < 0 || peer >= cfg_.procs || peer == r ||
          !offers_[r][peer].empty())
        return fail("rank " + std::to_string(r) + " sent a bad offer line: '" + line + "'");
      offers_[r][peer] = line.substr(space + 1);
      if (++c.offers + 1 == cfg_.procs &&
          all([&](const Child& k) { return k.offers + 1 == cfg_.procs; }))
        forward_offers();
    } else if (line == "ready" && !c.ready) {
      c.ready = true;
      if (all([](const Child& k) { return k.ready; }))
        for (auto& k : kids_) k.sock->send_all("go\n", kLineTimeout);
    } else if (line.starts_with("done ") && c.ready && !c.done) {
      c.done = true;
    } else {
      return fail("rank " + std::to_string(r) + " said '" + line + "' out of turn");
    }
    return true;
  }

  void forward_offers() {
    for (int to = 0; to < cfg_.procs; ++to) {
      std::string out;
      for (int from = 0; from < cfg_.procs; ++from)
        if (from != to) out += std::to_string(from) + ' ' + offers_[from][to] + '\n';
      kids_[to].sock->send_all(out, kLineTimeout);
    }
  }

  // Reaps the workers that exited; one that exits before it is done is a failure.
  bool reap_some() {
    for (int r = 0; r < cfg_.procs; ++r) {
      Child& c = kids_[r];
      if (c.reaped || ::waitpid(c.pid, &c.status, WNOHANG) != c.pid) continue;
      c.reaped = true;
      if (!c.done)
        return fail("rank " + std::to_string(r) + " " + describe(c.status) + " before finishing");
    }
    return true;
  }

  const LaunchConfig& cfg_;
  std::vector<Child>& kids_;
  std::vector<std::vector<std::string>> offers_;  // [from][to]
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

}  // namespace

core::EndpointConfig LaunchConfig::endpoint_config(std::size_t max_pinned_bytes) {
  core::EndpointConfig c;
  if (const char* d = std::getenv("UNET_DEVICE")) c.device = d;
  if (const char* g = std::getenv("UNET_GID_INDEX"); g && *g)
    c.gid_index = static_cast<std::uint32_t>(std::strtoul(g, nullptr, 10));
  c.transport = core::Transport::kRc;
  c.mode = core::Mode::kDirectAccess;
  c.buffer_bytes = 4096;
  c.buffers = 2 * kFreeQueueDepth;
  c.free_queue_depth = kFreeQueueDepth;
  c.send_queue_depth = 128;  // uam needs >= 80 (its reply reserve is 40)
  c.recv_queue_depth = 2 * kFreeQueueDepth;
  c.max_pinned_bytes = max_pinned_bytes;
  return c;
}

int launch(const LaunchConfig& cfg, const Work& work) {
  if (cfg.procs < 1 || cfg.procs > kMaxProcs)
    throw std::invalid_argument("procs must be 1.." + std::to_string(kMaxProcs));
  if (std::string why = missing_device(cfg.net.device); !why.empty()) {
    const char* req = std::getenv("UNET_REQUIRE_DEVICE");
    if (req && std::string(req) == "1") {
      std::fprintf(stderr, "%s: UNET_REQUIRE_DEVICE=1 but %s\n", cfg.program.c_str(), why.c_str());
      return kExitError;
    }
    std::fprintf(stderr, "%s: skipped: %s (run under ci/rxe-vm, or set up rxe: ci/rxe-host)\n",
                 cfg.program.c_str(), why.c_str());
    return kExitSkip;
  }

  std::signal(SIGPIPE, SIG_IGN);  // a dead worker's socket must fail a write, not kill us
  std::fflush(nullptr);           // or the children would print our buffered output again
  const pid_t self = ::getpid();
  std::vector<Child> kids(cfg.procs);
  std::vector<int> child_ends(cfg.procs, -1);
  for (int r = 0; r < cfg.procs; ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      verbs::throw_error("socketpair", "launcher", errno);
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
      return kExitError;
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // an orphaned worker must not linger
      if (::getppid() != self) ::_exit(kExitError);
      for (int k = 0; k < cfg.procs; ++k) {
        ::close(kids[k].sock->fd());
        if (k != r) ::close(child_ends[k]);
      }
      ::fcntl(child_ends[r], F_SETFL, O_NONBLOCK);  // OobSocket's timeouts need it
      const int code = worker(cfg, r, child_ends[r], work);
      std::fflush(nullptr);
      ::_exit(code);
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
  } catch (const std::exception& e) {  // a write to a worker that died
    std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), e.what());
  }
  if (!ok) {
    if (!parent.why().empty())
      std::fprintf(stderr, "%s: %s; stopping the workers\n", cfg.program.c_str(),
                   parent.why().c_str());
    for (auto& c : kids)
      if (!c.reaped) ::kill(c.pid, SIGTERM);
    reap_all(kids, milliseconds(3000));
    return kExitError;
  }
  reap_all(kids, milliseconds(60000));  // deregistering big windows takes a while under emulation
  int code = kExitOk;
  for (int r = 0; r < cfg.procs; ++r) {
    const int st = kids[r].status;
    if (WIFEXITED(st) && WEXITSTATUS(st) == kExitOk) continue;
    if (WIFEXITED(st) && WEXITSTATUS(st) == kExitWrong) {
      if (code == kExitOk) code = kExitWrong;
      continue;
    }
    std::fprintf(stderr, "%s: rank %d %s\n", cfg.program.c_str(), r, describe(st).c_str());
    code = kExitError;
  }
  return code;
}

int example_main(Options& opt, int argc, char** argv, const Setup& setup) {
  opt.add("procs", "4", "worker processes (1-8)");
  opt.add("seed", "1", "seed of the input generator");
  opt.add("chunk", "1048576", "bytes per store or get (a multiple of 4096)");
  opt.add("timeout", "600", "seconds the whole run, and every wait in it, may take");
  opt.add("device", "", "RDMA device (default: $UNET_DEVICE, else the first)");
  opt.add("stats", "0", "1: every rank prints its endpoint's counters to stderr at the end");
  opt.add("corrupt", "0",
          "test hook: 1 damages one element of the result, so verification must fail");
  const std::string program = opt.program();
  try {
    if (!opt.parse(argc, argv)) return kExitOk;
    CommonParams common;
    common.seed = opt.u64("seed");
    common.chunk = opt.u64("chunk", kPageBytes, 1u << 30);
    if (common.chunk % kPageBytes)
      throw std::invalid_argument("--chunk must be a multiple of 4096");
    common.corrupt = opt.u64("corrupt", 0, 1) == 1;
    LaunchConfig cfg;
    cfg.program = program;
    cfg.procs = static_cast<int>(opt.u64("procs", 1, kMaxProcs));
    cfg.timeout = std::chrono::seconds(opt.u64("timeout", 1, 86400));
    cfg.print_stats = opt.u64("stats", 0, 1) == 1;
    const Work work = setup(opt, common, cfg);
    if (!opt.str("device").empty()) cfg.net.device = opt.str("device");
    return launch(cfg, work);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program.c_str(), e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return kExitError;
  }
}

}  // namespace unet::uam::examples
