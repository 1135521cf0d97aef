// plan_endpoint(), choose_device(), plan_for(): endpoint_plan.h has the rules and formulas.
#include "unet/boot/endpoint_plan.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "unet/uam/credit_window.h"
#include "unet/verbs/device.h"

namespace unet::boot {

namespace {

constexpr std::uint32_t kMinPosted = 256;    // small jobs keep the examples' old free queue
constexpr std::uint32_t kRepostSlack = 32;   // core's repost batch, at most
constexpr std::uint32_t kSendBuffers = 256;  // segment buffers beyond the posted ones
constexpr std::uint32_t kRcBufferBytes = 4096;
constexpr std::uint32_t kGrhBytes = 64;  // UD: core's GRH slot per buffer
constexpr std::uint32_t kSendQueueDepth = 128;
constexpr std::uint32_t kMinSendQueueDepth = 80;  // uam: twice its reply reserve
constexpr std::uint32_t kMaxOperations = 256;
constexpr std::uint32_t kHeadBytes = 64;  // core's per-operation head slot (direct access)
static_assert(kMinSendQueueDepth <= kSendQueueDepth);

std::uint32_t per_channel(std::uint32_t w) { return 2 * w + (w + 1) / 2 + 2; }

std::string mib(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", bytes / (1 << 20));
  return s;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const auto comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

DeviceFacts read_facts(const std::string& device, core::Transport transport) {
  DeviceFacts f;
  f.name = device;
  auto ctx = verbs::Context::open(device);
  const verbs::DeviceLimits& l = ctx->limits();
  f.mtu = ctx->port(1).active_mtu;
  f.max_qp = l.max_qp;
  f.max_ah = l.max_ah;
  f.max_cqe = l.max_cqe;
  f.max_recv_wr = transport == core::Transport::kRc ? l.max_srq_wr : l.max_qp_wr;
  rlimit lim{};
  if (::geteuid() != 0 && ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    f.memlock_bytes = lim.rlim_cur;  // root pins past it (CAP_IPC_LOCK)
  return f;
}

}  // namespace

EndpointPlan plan_endpoint(const PlanRequest& req, const DeviceFacts& dev) {
  if (req.ranks < 1) throw Error("a job needs at least one rank");
  const bool rc = req.transport == core::Transport::kRc;
  const std::uint32_t channels = static_cast<std::uint32_t>(req.ranks - 1);
  const std::string job = std::to_string(req.ranks) + " ranks over " + (rc ? "RC" : "UD");

  // The largest credit window up to uam's default whose receive buffers fit the budget.
  std::uint32_t w = uam::CreditWindow::kDefaultWindow;
  auto posted = [&](std::uint32_t win) {
    return std::max<std::uint64_t>(kMinPosted,
                                   std::uint64_t{channels} * per_channel(win) + kRepostSlack);
  };
  while (w > 1 && posted(w) > req.max_posted_buffers) --w;
  if (posted(w) > req.max_posted_buffers)
    throw Error(job + " do not fit: " + std::to_string(channels) + " channels x " +
                std::to_string(per_channel(1)) + " posted receive buffers (credit window 1) + " +
                std::to_string(kRepostSlack) + " = " + std::to_string(posted(1)) +
                ", over the budget of " + std::to_string(req.max_posted_buffers) + " per rank");
  const auto fq = static_cast<std::uint32_t>(posted(w));
  if (fq > dev.max_recv_wr)
    throw Error(job + " do not fit: " + std::to_string(fq) +
                " posted receive buffers per rank, but " +
                (dev.name.empty() ? "the device" : dev.name) + " allows " +
                std::to_string(dev.max_recv_wr) + (rc ? " on a shared receive queue" : " on a QP"));
  // Device-wide objects, one per channel of each rank on the device: RC's QPs, UD's AHs.
  const std::uint64_t objects = std::uint64_t(std::max(req.ranks_per_device, 1)) * channels;
  const std::uint32_t limit = rc ? dev.max_qp : dev.max_ah;
  if (objects > limit)
    throw Error(job + " do not fit: " + std::to_string(std::max(req.ranks_per_device, 1)) +
                " ranks on " + (dev.name.empty() ? "the device" : dev.name) + " x " +
                std::to_string(channels) + " channels need " + std::to_string(objects) +
                (rc ? " RC QPs" : " address handles") + ", but it allows " + std::to_string(limit));
  // core's CQ: the posted buffers plus a send queue per channel's QP.
  const std::uint32_t lanes = std::max<std::uint32_t>(channels, 1);
  std::uint32_t sqd = kSendQueueDepth;
  if (dev.max_cqe < fq + std::uint64_t{sqd} * lanes)
    sqd = dev.max_cqe > fq ? (dev.max_cqe - fq) / lanes : 0;
  if (sqd < kMinSendQueueDepth)
    throw Error(job + " do not fit: the completion queue needs " +
                std::to_string(fq + std::uint64_t{kMinSendQueueDepth} * lanes) + " entries, but " +
                (dev.name.empty() ? "the device" : dev.name) + " allows " +
                std::to_string(dev.max_cqe));

  EndpointPlan p;
  core::EndpointConfig& c = p.net;
  c.device = dev.name;
  c.transport = req.transport;
  c.mode = req.mode;
  c.buffer_bytes = rc ? kRcBufferBytes : std::max<std::uint32_t>(dev.mtu, 256);
  c.free_queue_depth = fq;
  c.buffers = fq + kSendBuffers;
  c.recv_queue_depth = fq;
  c.send_queue_depth = sqd;
  c.max_channels = lanes;
  c.max_operations = kMaxOperations;
  c.max_grants = std::max<std::uint32_t>(64, static_cast<std::uint32_t>(req.ranks));
  c.max_pinned_bytes = req.max_pinned_bytes;
  p.am.window = static_cast<std::uint8_t>(w);
  const auto patience = std::chrono::milliseconds(20) * req.ranks;
  if (rc) {
    // RC acks come from the device, but rxe's are kernel software that ranks outnumbering the
    // CPUs starve like any thread, and a try that times out while the burst it belongs to is
    // still queued resends it, so the load feeds itself (boot/README.md: Failure). Give a silent
    // QP at least 2 s and 200 ms per rank: 4.096 us x 2^ack_timeout x (retry_count + 1).
    const std::chrono::nanoseconds want = std::max<std::chrono::nanoseconds>(
        std::chrono::seconds(2), std::chrono::milliseconds(200) * req.ranks);
    const std::chrono::nanoseconds per_try = want / (c.retry_count + 1);
    while (c.ack_timeout < 24 &&
           std::chrono::nanoseconds(std::int64_t{4096} << c.ack_timeout) < per_try)
      ++c.ack_timeout;
  }
  if (!rc && patience > std::chrono::milliseconds(800)) {
    // UD acks come from the peer's software: a rank that waits for a CPU longer than uam's
    // default patience (8 expiries, backing off to 160 ms: about 0.8 s) is taken for dead. Give
    // a silent peer at least 20 ms per rank of the job: ranks may outnumber a node's CPUs.
    uam::ReliabilityConfig& r = p.am.reliability;
    r.rto_max = std::max<std::chrono::nanoseconds>(r.rto_max, std::chrono::seconds(1));
    std::chrono::nanoseconds waited{0}, rto = r.rto_initial;
    std::uint32_t retries = 0;
    for (; waited < patience; ++retries, rto = std::min(2 * rto, r.rto_max)) waited += rto;
    r.max_retries = std::max(r.max_retries, retries);
  }
  p.per_channel = per_channel(w);
  const std::size_t slot = c.buffer_bytes + (rc ? 0 : kGrhBytes);
  p.segment_bytes = (std::size_t{c.buffers} * slot + 4095) / 4096 * 4096;
  if (rc) p.ring_bytes = std::size_t{std::min(channels, c.max_rings)} * core::ring_channel_bytes(c);
  p.pinned_bytes = p.segment_bytes + p.ring_bytes;
  if (req.mode == core::Mode::kDirectAccess)
    p.pinned_bytes += req.max_pinned_bytes + std::size_t{kMaxOperations} * kHeadBytes;
  if (p.pinned_bytes > dev.memlock_bytes)
    throw Error(job + " do not fit: a rank pins up to " + mib(double(p.pinned_bytes)) +
                " (segment " + mib(double(p.segment_bytes)) + ", rings " +
                mib(double(p.ring_bytes)) + "), over RLIMIT_MEMLOCK of " +
                mib(double(dev.memlock_bytes)) + " (raise it: ulimit -l)");
  return p;
}

namespace {

// The list the device rule picks from: UNET_DEVICE's, else every device of the node.
std::vector<std::string> device_list() {
  const char* env = std::getenv("UNET_DEVICE");
  return env && *env ? split(env) : verbs::device_names();
}

}  // namespace

std::string choose_device(int local_rank) {
  const std::vector<std::string> list = device_list();
  if (list.empty()) return {};
  return list[static_cast<std::size_t>(local_rank) % list.size()];
}

EndpointPlan plan_for(Job& job, PlanRequest req) {
  req.ranks = job.size();
  const std::string device = choose_device(job.local_rank());
  // This node's ranks on our device: local ranks r with r = local_rank (mod the list's length).
  const int devices = std::max<int>(1, static_cast<int>(device_list().size()));
  req.ranks_per_device = (job.local_size() - job.local_rank() % devices + devices - 1) / devices;
  std::string verdict;
  EndpointPlan plan;
  try {
    plan = plan_endpoint(req, read_facts(device, req.transport));
    if (const char* g = std::getenv("UNET_GID_INDEX"); g && *g)
      plan.net.gid_index = static_cast<std::uint32_t>(std::strtoul(g, nullptr, 10));
  } catch (const std::exception& e) {
    verdict =
        "(node " + job.node() + ", device " + (device.empty() ? "none" : device) + ") " + e.what();
  }
  // Every rank learns every verdict, so all stop alike, before any traffic.
  const std::vector<std::string> all = job.allgather(verdict);
  for (int r = 0; r < job.size(); ++r)
    if (!all[r].empty()) throw AgreedError("rank " + std::to_string(r) + " " + all[r]);
  return plan;
}

}  // namespace unet::boot
