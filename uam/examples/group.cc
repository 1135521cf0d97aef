#include "group.h"

#include <sched.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace unet::uam::examples {

namespace {

// An idle rank polls for kSpinFor, then polls and yields the CPU (sched_yield) for up to
// kYieldFor, then sleeps on the completion channel. Ranks often outnumber the CPUs (8 on the VM's
// two), so a spinning rank must not keep the CPU the one it waits for needs; but a wake-up from
// the channel costs milliseconds in the VM (uam/examples/README.md: the barrier). Yielding keeps a
// waiting rank on the run queue, as Open MPI's yield_when_idle does, but a yield may hand the CPU
// away for a scheduler slice: the spin covers a round trip and more, so that a wait for one message
// does not yield (uam/examples/README.md: the barrier).
constexpr std::chrono::microseconds kSpinFor{100};
constexpr std::chrono::milliseconds kYieldFor{5};
constexpr std::chrono::milliseconds kSleep{10};

std::string status_text(Status s) { return std::string(to_string(s)); }

}  // namespace

Group::Group(Endpoint& ep, int rank, std::vector<ChannelId> channels,
             std::chrono::milliseconds timeout)
    : ep_(ep),
      rank_(rank),
      channels_(std::move(channels)),
      timeout_(timeout),
      patience_(core::CycleClock::process().ticks(timeout)),
      spin_ticks_(core::CycleClock::process().ticks(kSpinFor)),
      yield_ticks_(core::CycleClock::process().ticks(kSpinFor + kYieldFor)) {
  for (std::size_t r = 0; r < channels_.size(); ++r) {
    const ChannelId ch = channels_[r];
    if (static_cast<int>(r) == rank_) continue;
    if (ch >= rank_by_channel_.size()) rank_by_channel_.resize(ch + 1, -1);
    rank_by_channel_[ch] = static_cast<int>(r);
  }
  ep_.on_completion([this](ChannelId ch, std::uint64_t, Status s) {
    if (s != Status::kOk && failure_.empty()) {
      const std::string peer = std::to_string(rank_of(ch));
      failure_ = "an operation with rank " + peer + " failed: " + status_text(s);
      if (s == Status::kRetryExceeded && !placement_.empty())
        failure_ += ": rank " + peer + " is gone or its device does not reach ours (ranks " +
                    placement_ + "; UNET_DEVICE names the devices to use)";
    }
  });
  auto check = [](Status s) {
    if (s != Status::kOk)
      throw std::logic_error("Group: handler registration refused: " + status_text(s));
  };
  check(ep_.on_request(kArrive, [this](Token&, const Message& m) {
    if (m.args.size() != 1 || m.args[0] >= arrivals_.size()) {
      if (failure_.empty())
        failure_ = "a malformed barrier message from rank " + std::to_string(rank_of(m.channel));
      return Disposition::kDone;
    }
    ++arrivals_[m.args[0]];
    return Disposition::kDone;
  }));
  check(ep_.on_request(kMail, [this](Token&, const Message& m) {
    deliver(rank_of(m.channel), static_cast<std::uint32_t>(m.args[0]), m.args[1], m.args[2],
            m.payload);
    return Disposition::kDone;
  }));
}

void Group::on_request(HandlerId id, RequestHandler fn) {
  if (id >= kFirstGroupHandler)
    throw std::invalid_argument("handler id " + std::to_string(id) + " is the group's");
  if (Status s = ep_.on_request(id, std::move(fn)); s != Status::kOk)
    throw std::logic_error("request handler " + std::to_string(id) + " refused: " + status_text(s));
}

void Group::on_reply(HandlerId id, ReplyHandler fn) {
  if (id >= kFirstGroupHandler)
    throw std::invalid_argument("handler id " + std::to_string(id) + " is the group's");
  if (Status s = ep_.on_reply(id, std::move(fn)); s != Status::kOk)
    throw std::logic_error("reply handler " + std::to_string(id) + " refused: " + status_text(s));
}

int Group::rank_of(ChannelId ch) const {
  return ch < rank_by_channel_.size() ? rank_by_channel_[ch] : -1;
}

void Group::progress() {
  check_failure();
  const int n = ep_.poll();
  if (n < 0) throw std::runtime_error("device error while polling the endpoint");
  if (n > 0) {
    idle_ = false;
    return;
  }
  const std::uint64_t now = core::CycleClock::now();
  if (!idle_) {
    idle_ = true;
    idle_since_ = now;
  }
  if (now - idle_since_ < spin_ticks_) return;
  if (now - idle_since_ < yield_ticks_) {
    sched_yield();
    return;
  }
  const Status s = ep_.wait(kSleep);
  if (s != Status::kOk && s != Status::kTimeout)
    throw std::runtime_error("waiting on the endpoint failed: " + status_text(s));
  if (s == Status::kOk) idle_ = false;
}

void Group::flush() {
  if (ep_.flush() < 0) throw std::runtime_error("device error while posting to the endpoint");
}

void Group::check_failure() const {
  if (!failure_.empty()) throw std::runtime_error(failure_);
}

void Group::timed_out(std::string_view what) const {
  throw std::runtime_error("timed out after " + std::to_string(timeout_.count() / 1000) +
                           " s waiting for " + std::string(what));
}

void Group::quiesce() {
  wait_until(
      [&] {
        for (int r = 0; r < size(); ++r)
          if (r != rank_ && ep_.outstanding(channel(r)) != 0) return false;
        return true;
      },
      "our requests, stores and gets to complete");
  check_failure();
}

template <class Attempt>
void Group::retry(const Attempt& attempt, const char* op, int peer) {
  const std::uint64_t deadline = core::CycleClock::now() + patience_;
  for (;;) {
    const Status s = attempt();
    if (s == Status::kOk) return;
    if (s != Status::kNoResource)
      throw std::runtime_error(std::string(op) + " to rank " + std::to_string(peer) +
                               " refused: " + status_text(s));
    progress();  // back-pressure: credits, send-queue room or pinned bytes come back with progress
    if (core::CycleClock::now() > deadline) timed_out(std::string("room for a ") + op);
  }
}

void Group::request(int peer, HandlerId handler, std::span<const std::uint64_t> args,
                    std::span<const std::byte> payload) {
  const ChannelId ch = channel(peer);
  retry([&] { return ep_.request(ch, handler, args, payload); }, "request", peer);
}

void Group::store(int peer, std::span<const std::byte> local, const core::RemoteToken& remote,
                  std::uint64_t offset, HandlerId handler, std::span<const std::uint64_t> args) {
  const ChannelId ch = channel(peer);
  retry([&] { return ep_.store(ch, local.data(), local.size(), remote, offset, handler, args); },
        "store", peer);
}

void Group::get(int peer, const core::RemoteToken& remote, std::uint64_t offset,
                std::span<std::byte> local, HandlerId handler, std::span<const std::uint64_t> args,
                std::uint64_t cookie) {
  const ChannelId ch = channel(peer);
  retry(
      [&] {
        return ep_.get(ch, remote, offset, local.data(), local.size(), handler, args, cookie);
      },
      "get", peer);
}

// A dissemination barrier (Hensgen, Finkel and Manber): in round k every rank tells rank + 2^k
// and waits for rank - 2^k, so after ceil(log2 N) rounds each has heard, directly or not, from
// all. Round k's messages come from one rank only, in order, so counting them per round suffices.
void Group::barrier() {
  if (++epoch_ == kill_epoch_) std::raise(SIGKILL);
  const int n = size();
  for (std::uint64_t k = 0, step = 1; step < static_cast<std::uint64_t>(n); ++k, step *= 2) {
    const int to = static_cast<int>((rank_ + step) % n);
    const int from = static_cast<int>((rank_ + n - step) % n);
    const std::uint64_t args[1] = {k};
    request(to, kArrive, args);
    wait_until(
        [&] { return arrivals_[k] >= epoch_; },
        [&] { return "rank " + std::to_string(from) + " at barrier " + std::to_string(epoch_); });
  }
}

void Group::send(int peer, std::uint32_t tag, std::span<const std::byte> bytes) {
  if (peer == rank_) {
    deliver(rank_, tag, 0, bytes.size(), bytes);
    return;
  }
  const std::size_t chunk = ep_.max_payload(3);
  std::size_t offset = 0;
  do {  // at least one request, so that an empty message arrives too
    const std::size_t n = std::min(chunk, bytes.size() - offset);
    const std::uint64_t args[3] = {tag, offset, bytes.size()};
    request(peer, kMail, args, bytes.subspan(offset, n));
    offset += n;
  } while (offset < bytes.size());
}

// A chunk of tagged message: chunks of one message arrive in order (one channel, one sender).
void Group::deliver(int from, std::uint32_t tag, std::uint64_t offset, std::uint64_t total,
                    std::span<const std::byte> chunk) {
  Mail& m = mail_[{from, tag}];
  if (offset == 0) m.data.resize(total);
  if (m.complete || m.data.size() != total || offset + chunk.size() > total) {
    if (failure_.empty()) failure_ = "a malformed message from rank " + std::to_string(from);
    return;
  }
  if (!chunk.empty()) std::memcpy(m.data.data() + offset, chunk.data(), chunk.size());
  m.got += chunk.size();
  m.complete = m.got == total;
}

std::vector<std::byte> Group::recv(int peer, std::uint32_t tag) {
  const auto key = std::make_pair(peer, tag);
  wait_until(
      [&] {
        auto it = mail_.find(key);
        return it != mail_.end() && it->second.complete;
      },
      "message " + std::to_string(tag) + " from rank " + std::to_string(peer));
  std::vector<std::byte> data = std::move(mail_[key].data);
  mail_.erase(key);
  return data;
}

}  // namespace unet::uam::examples
