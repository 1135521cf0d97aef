// unet_perf's set-up: the out-of-band TCP session between server and client (settings check, the
// per-size handshakes) and the channel between the two endpoints (sizing.h sizes the endpoints).
//
// The session protocol, one text line each way, client first:
//   settings   client: settings_line();            server: "ok" or "mismatch <message>"
//   per size   client: "size N ok|skip <why>|error <why>"; server: the same for its side
//              then the channel (connect_channel), direct-access tokens, "go" both ways
//   end        client: "done <count>";             server: "done <count>" or "error <why>"
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "options.h"
#include "unet/core/endpoint.h"
#include "unet/core/remote_token.h"
#include "unet/uam/endpoint.h"
#include "unet/verbs/oob.h"

namespace unet::perf {

// A failure that ends the run: main prints what() and exits 1.
class PerfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Session {
 public:
  // The server listens on -p and accepts one client; the client connects to HOST:-p, retrying
  // while the server is not up yet, for at most --timeout_ms. Throws verbs::Error.
  static Session open(const PerfConfig& c);

  bool client() const noexcept { return client_; }
  void send_line(std::string_view line);  // appends '\n'
  std::string recv_line();                // bounded by --timeout_ms
  std::string recv_line(std::chrono::milliseconds timeout);
  // True when the peer has sent something not read yet (never blocks): a side that must keep
  // polling its endpoint until the peer's next line (am_*'s server) asks this between polls.
  bool line_waiting() const;

  // The settings check (the client sends, the server compares and answers). Throws PerfError
  // naming the differing setting, on both sides.
  void check_settings(const PerfConfig& c);

 private:
  Session(verbs::OobSocket s, bool client, std::chrono::milliseconds timeout)
      : sock_(std::move(s)), client_(client), timeout_(timeout) {}
  verbs::OobSocket sock_;
  bool client_;
  std::chrono::milliseconds timeout_;
};

// Sets up the one channel of this size's endpoint with the peer: out of band over the session
// (offer / accept_offer, client first) or through rdma_cm (-R: the server listens on -p and says
// so over the session; the client connects to HOST:-p). --oob rc_pingpong will add its connector
// here (bench/interop/rc_pingpong_oob.h), not built yet.
core::ChannelId connect_channel(core::Endpoint& ep, const PerfConfig& c, Session& s);
// The same for an active-message endpoint (its own offer/accept calls add the channel's state).
core::ChannelId connect_channel(uam::Endpoint& ep, const PerfConfig& c, Session& s);

// The per-size handshake: each side says whether it can run `size` ("ok", "skip <why>" or
// "error <why>" in `state`; client first). Returns "" when both run it, else the reason it is
// skipped; throws PerfError when either side failed or the peer is at another size.
std::string agree_size(Session& s, std::uint32_t size, const std::string& state);

// Swaps remote tokens (client first); returns the peer's.
core::RemoteToken exchange_tokens(Session& s, const core::RemoteToken& mine);

// Both sides say "go" (client first): everything before it is set up on both sides.
void sync_go(Session& s);

// The end of one size. The client sends its count; the server compares it with `count` and with
// `server_check()` (a description of what is wrong, "" if nothing), and answers. A difference
// throws PerfError on both sides. `server_wait` bounds the server's wait for the client's count
// when the server has nothing to do meanwhile (one-sided tests); zero means --timeout_ms.
// Returns the peer's count (equal to `count`, or it threw).
std::uint64_t finish_round(Session& s, std::uint64_t count,
                           const std::function<std::string()>& server_check = {},
                           std::chrono::milliseconds server_wait = {});

// How long a server that only waits may wait for a client moving `bytes`: --timeout_ms plus the
// time at a (very slow) 1 MiB/s. The client itself is bounded by --timeout_ms per step, and its
// death closes the session at once, so this bound is only reached when something is badly wrong.
std::chrono::milliseconds idle_server_wait(const PerfConfig& c, std::uint64_t bytes);

}  // namespace unet::perf
