// Group: the ranks of one parallel program, and what the examples build on U-Net Active
// Messages: bounded progress, a barrier, tagged byte messages, and request/store/get wrappers that
// retry on back-pressure and turn every failure into an exception naming the rank involved.
//
// One Group per rank, made by example_main() (example_main.h) once every channel of the full mesh
// is open (boot::connect_all): channel(peer) is the RC channel to rank `peer`. Everything here
// runs on the rank's one thread. The wrappers poll while they retry, so they must not be called
// from inside a handler (handlers only record what arrived; the program's main line reacts to it
// through wait_until).
//
// Handler ids from kFirstGroupHandler up belong to the group; programs use the ids below.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "unet/core/cycle_clock.h"
#include "unet/uam/endpoint.h"

namespace unet::uam::examples {

inline constexpr HandlerId kFirstGroupHandler = 240;

class Group {
 public:
  // `channels[r]` is the channel to rank r (kNoChannel at our own rank). Every wait below gives
  // up after `timeout`. Registers the group's handlers and the endpoint's completion handler.
  Group(Endpoint& ep, int rank, std::vector<ChannelId> channels, std::chrono::milliseconds timeout);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return static_cast<int>(channels_.size()); }
  Endpoint& endpoint() noexcept { return ep_; }
  ChannelId channel(int peer) const { return channels_.at(static_cast<std::size_t>(peer)); }
  // The rank at the other end of `ch` (a handler's Message::channel).
  int rank_of(ChannelId ch) const;
  // Where the ranks run (boot::placement()): named when a peer proves unreachable.
  void set_placement(std::string where) { placement_ = std::move(where); }

  // Registers a program's handler (ids below kFirstGroupHandler); throws if the id is taken. Its
  // captures must outlive every message that can still reach it (uam cannot unregister one).
  void on_request(HandlerId id, RequestHandler fn);
  void on_reply(HandlerId id, ReplyHandler fn);

  // --- progress ---
  // Posts what we queued, then polls until done() holds. Throws std::runtime_error naming `what`
  // (a string, or a function that makes one, called only then) after the timeout, or as soon as
  // one of our requests, stores or gets completed with an error.
  template <class Done, class What>
  void wait_until(const Done& done, const What& what) {
    flush();  // done() may hold already: what we queued must not wait for whatever comes next
    const std::uint64_t deadline = core::CycleClock::now() + patience_;
    while (!done()) {
      progress();
      if (core::CycleClock::now() <= deadline) continue;
      if constexpr (std::is_invocable_v<const What&>)
        timed_out(what());
      else
        timed_out(what);
    }
  }
  // One step of progress: poll; after idle polls for a round trip and more, yield the CPU between
  // polls for a few milliseconds, then sleep on the completion channel (ranks share the CPUs).
  // Throws on a device error or a failed operation.
  void progress();
  // Posts what request(), store() and get() queued (uam sends them at the next poll or flush).
  void flush();
  // Waits until every request, store and get we issued has completed (acknowledged by its peer).
  void quiesce();

  // --- data path, from the main line only ---
  void request(int peer, HandlerId handler, std::span<const std::uint64_t> args,
               std::span<const std::byte> payload = {});
  // `local` must stay untouched until the store completes (quiesce()).
  void store(int peer, std::span<const std::byte> local, const core::RemoteToken& remote,
             std::uint64_t offset, HandlerId handler, std::span<const std::uint64_t> args = {});
  void get(int peer, const core::RemoteToken& remote, std::uint64_t offset,
           std::span<std::byte> local, HandlerId handler, std::span<const std::uint64_t> args = {},
           std::uint64_t cookie = 0);

  // --- collectives, all by requests ---
  // Returns once every rank has called it (a dissemination barrier: ceil(log2 N) rounds of one
  // request each way, no rank in the middle).
  void barrier();
  // Tagged byte messages: send() splits `bytes` into medium requests (the copy is made before it
  // returns); recv() waits until the whole message of `tag` from `peer` is in. A rank may send to
  // itself. Each (peer, tag) carries one message at a time.
  void send(int peer, std::uint32_t tag, std::span<const std::byte> bytes);
  std::vector<std::byte> recv(int peer, std::uint32_t tag);

  // A remote token as four request words, and back.
  static std::array<std::uint64_t, 4> words(const core::RemoteToken& t) noexcept {
    return {t.addr, t.length, t.rkey, t.id};
  }
  static core::RemoteToken token(std::span<const std::uint64_t> w) noexcept {
    return {w[0], w[1], static_cast<std::uint32_t>(w[2]), static_cast<std::uint32_t>(w[3])};
  }

  std::chrono::milliseconds timeout() const noexcept { return timeout_; }

  // Test hook: this rank kills itself with SIGKILL when it reaches barrier number `epoch` (from
  // 1), as a rank that dies mid-run.
  void kill_at_barrier(std::uint64_t epoch) noexcept { kill_epoch_ = epoch; }

 private:
  static constexpr HandlerId kArrive = kFirstGroupHandler, kMail = kFirstGroupHandler + 1;
  struct Mail {
    std::vector<std::byte> data;
    std::size_t got = 0;
    bool complete = false;
  };

  // Calls `attempt` until it is not kNoResource, making progress in between; throws on failure.
  template <class Attempt>
  void retry(const Attempt& attempt, const char* op, int peer);
  [[noreturn]] void timed_out(std::string_view what) const;
  void check_failure() const;
  void deliver(int from, std::uint32_t tag, std::uint64_t offset, std::uint64_t total,
               std::span<const std::byte> chunk);

  Endpoint& ep_;
  int rank_;
  std::vector<ChannelId> channels_;
  std::vector<int> rank_by_channel_;
  std::chrono::milliseconds timeout_;
  std::uint64_t patience_;        // timeout_ in cycle-counter ticks
  std::uint64_t spin_ticks_;      // kSpinFor (group.cc) in cycle-counter ticks
  std::uint64_t yield_ticks_;     // kSpinFor + kYieldFor
  bool idle_ = false;             // the last poll found nothing to do
  std::uint64_t idle_since_ = 0;  // when the first of the polls in a row that found nothing ran
  std::string failure_;           // the first failed operation, if any
  std::string placement_;         // set_placement()
  std::array<std::uint64_t, 32> arrivals_{};  // barrier messages per round (up to 2^32 ranks)
  std::uint64_t epoch_ = 0;                   // barriers entered
  std::uint64_t kill_epoch_ = 0;              // kill_at_barrier()
  std::map<std::pair<int, std::uint32_t>, Mail> mail_;
};

}  // namespace unet::uam::examples
