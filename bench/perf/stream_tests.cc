// stream_lat and stream_bw over ulp's StreamEndpoint (checks and waits: ulp_tests.h).
//
// stream_lat is rstream's latency test over one connection: the client sends `-s` bytes, the
// server reads exactly that many and sends them back; the iteration ends when the client has read
// all of them. Timed as dgram_lat.
//
// stream_bw is rstream's bandwidth direction over one connection: the client streams warm-up +
// `-n` messages of `-s` bytes (default 64 KiB), the server reads them, message by message, and
// counts. A message is posted when send() took its last byte; it is complete when the client
// knows that the server acknowledged it — end to end, as ep_bw: the send buffer holds only bytes
// not yet acknowledged (at most kUlpStreamSendBuffer), so once send() has taken the byte at offset
// end + kUlpStreamSendBuffer the message ending at `end` was acknowledged; the messages left at the
// end complete when the client's FIN (sent after all data) is acknowledged. With --mode direct the
// client sends zero-copy instead (send_zero_copy from 16 message slots of its own memory, the
// endpoint direct-access) and a message is complete when its completion reports it acknowledged.
// BW and message rate as perftest defines them (report.h); the server's byte count is compared at
// the end.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "round.h"
#include "sizing.h"
#include "ulp_tests.h"
#include "unet/ulp/stream_endpoint.h"
#include "unet/verbs/error.h"

namespace unet::perf {
namespace {

constexpr const char* kStreamLate =
    " (the stream resends what UD loses: is the peer alive and reachable?)";

// A round of the stream tests: one connection of a ulp::StreamEndpoint.
struct StreamRound : SizeRun {
  ulp::StreamEndpoint& ep;
  ulp::ConnId conn;
  UlpProgress<ulp::StreamEndpoint>& progress;
};

// Queues all of `data` on the stream, making progress while its send buffer is full. `took(n)`
// runs after every send() that took n > 0 bytes.
template <class Took>
void send_all(StreamRound& r, std::span<const std::byte> data, Took took) {
  std::size_t off = 0;
  auto push = [&] {
    while (off < data.size()) {
      std::size_t n = 0;
      if (!r.progress.succeeded(r.ep.send(r.conn, data.subspan(off), n), "send")) return false;
      off += n;
      took(n);
    }
    return true;
  };
  if (!push()) r.progress.until(push, "room in the send buffer");
}

// Reads exactly out.size() bytes.
void recv_exact(StreamRound& r, std::span<std::byte> out, const char* what) {
  std::size_t off = 0;
  auto pull = [&] {
    while (off < out.size()) {
      std::size_t n = 0;
      const Status st = r.ep.recv(r.conn, out.subspan(off), n);
      if (st == Status::kClosed)
        throw PerfError("the peer ended the stream with " + std::to_string(off) + " of " +
                        std::to_string(out.size()) + " bytes of a message unread");
      if (!r.progress.succeeded(st, "recv")) return false;
      off += n;
    }
    return true;
  };
  if (!pull()) r.progress.until(pull, what);
}

// Waits for the end of the stream (the peer's FIN) with nothing more to read.
void await_end(StreamRound& r, const char* what) {
  r.progress.until(
      [&] {
        std::byte extra[64];
        std::size_t n = 0;
        const Status st = r.ep.recv(r.conn, extra, n);
        if (st == Status::kClosed) return true;
        if (st == Status::kOk)
          throw PerfError("the peer sent " + std::to_string(n) + " bytes more than the test's");
        if (st != Status::kNoResource) r.progress.failed("recv", st);
        return false;
      },
      what);
}

std::string stream_problems(const ulp::StreamEndpoint& ep) {
  if (ep.stats().malformed == 0) return "";
  return "the stream endpoint refused " + std::to_string(ep.stats().malformed) +
         " malformed segments";
}

// The server's end of both stream tests, after its last message: the client's FIN, our close,
// then on (acknowledging) until the client's count waits on the session, and the comparison.
void serve_end(StreamRound& r, std::uint64_t count) {
  await_end(r, "the end of the client's stream");
  if (Status st = r.ep.close(r.conn); st != Status::kOk) r.progress.failed("close", st);
  r.progress.finish_serving(count, [&] { return stream_problems(r.ep); });
}

// The client's end: shut down (unless `shut` already), read the server's end of the stream (it
// closes after reading everything), note the connection's repairs in `result`, give the
// connection back, compare counts.
std::uint64_t client_end(StreamRound& r, SizeResult& result, std::uint64_t count,
                         bool shut = false) {
  if (!shut)
    if (const Status st = r.ep.shutdown(r.conn); st != Status::kOk)
      r.progress.failed("shutdown", st);
  await_end(r, "the end of the server's stream");
  if (const std::optional<ulp::StreamStats> st = r.ep.stats(r.conn)) {
    result.retransmitted_segments = st->retransmitted_segments;
    result.retransmit_timeouts = st->timeouts;
  }
  (void)r.ep.close(r.conn);
  if (std::string bad = stream_problems(r.ep); !bad.empty()) throw PerfError(bad);
  return finish_round(*r.session, count);
}

SizeResult stream_lat(StreamRound& r) {
  const std::uint64_t total = r.total();
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);
  std::vector<std::byte> out(r.size), in(r.size);
  auto ignore = [](std::size_t) {};

  if (!r.cfg.is_client()) {  // server: read a message, send it back
    std::uint64_t echoed = 0;
    for (; echoed < total; ++echoed) {
      recv_exact(r, in, echoed == 0 ? "a message from the client" : "the next message");
      if (std::string bad = check_message(in, echoed, total, false, "message"); !bad.empty())
        throw PerfError(bad);
      send_all(r, in, ignore);
    }
    serve_end(r, echoed);
    return result;
  }

  std::vector<std::uint64_t> stamps(total + 1);
  for (std::uint64_t it = 0; it < total; ++it) {
    fill_message(out, it, total, false);
    stamps[it] = core::CycleClock::now();
    send_all(r, out, ignore);
    recv_exact(r, in, "the echo of a message");
    if (it == 0 || it + 1 == total)
      if (std::string bad = check_message(in, it, total, false, "echo of message"); !bad.empty())
        throw PerfError(bad);
  }
  stamps[total] = core::CycleClock::now();
  result.server_count = client_end(r, result, total);
  result.latency = round_trip_latency(stamps, r.cfg.warmup, r.clock.ticks_per_us());
  return result;
}

// stream_bw's client, copying: send() takes each message into the send buffer.
void stream_bw_copied(StreamRound& r, std::vector<std::uint64_t>& posted,
                      std::vector<std::uint64_t>& completed) {
  const std::uint64_t total = r.total(), warmup = r.cfg.warmup;
  const std::uint64_t bytes = total * r.size;
  std::vector<std::byte> out(r.size);
  std::uint64_t taken = 0;  // bytes send() took so far
  std::uint64_t acked = 0;  // messages known to be acknowledged
  // Everything below taken - kUlpStreamSendBuffer has left the send buffer: acknowledged.
  auto complete_up_to = [&](std::uint64_t messages, std::uint64_t when) {
    for (; acked < messages; ++acked)
      if (acked >= warmup) completed[acked - warmup] = when;
  };
  auto took = [&](std::size_t n) {
    taken += n;
    if (taken > kUlpStreamSendBuffer)
      complete_up_to(std::min(total, (taken - kUlpStreamSendBuffer) / r.size),
                     core::CycleClock::now());
  };
  for (std::uint64_t k = 0; k < total; ++k) {
    fill_message(out, k, total, false);
    send_all(r, out, took);
    if (k >= warmup) posted[k - warmup] = core::CycleClock::now();
  }
  // Our FIN follows the data: once it is acknowledged, so is every byte.
  if (Status st = r.ep.shutdown(r.conn); st != Status::kOk) r.progress.failed("shutdown", st);
  r.progress.until(
      [&] {
        ulp::StreamState state;
        if (r.ep.state(r.conn, state) != Status::kOk)
          throw PerfError("the connection went away before its FIN was acknowledged");
        if (const std::optional<ulp::StreamStats> st = r.ep.stats(r.conn);
            state == ulp::StreamState::kClosed && st && st->bytes_sent != bytes)
          throw PerfError("the connection closed before all data was acknowledged");
        return state == ulp::StreamState::kFinWait2 || state == ulp::StreamState::kTimeWait ||
               state == ulp::StreamState::kClosed;
      },
      "the acknowledgement of the last bytes");
  complete_up_to(total, core::CycleClock::now());
}

// stream_bw's client, zero-copy (--mode direct): message k goes from slot k % kSlots of the
// application's memory with send_zero_copy, and is complete when its completion says the server
// acknowledged all of it; only then is its slot used again.
void stream_bw_zero_copy(StreamRound& r, std::vector<std::uint64_t>& posted,
                         std::vector<std::uint64_t>& completed) {
  constexpr std::uint64_t kSlots = ulp::StreamEndpoint::kMaxZeroCopySends;
  const std::uint64_t total = r.total(), warmup = r.cfg.warmup;
  std::vector<std::byte> memory(kSlots * r.size);
  std::uint64_t next = 0, done = 0;
  auto reap = [&] {
    ulp::ZeroCopyCompletion z;
    while (r.ep.zero_copy_completion(z) == Status::kOk) {
      if (z.status != Status::kOk) r.progress.failed("a zero-copy send", z.status);
      if (z.tag != done)
        throw PerfError("zero-copy send " + std::to_string(z.tag) + " completed in place of " +
                        std::to_string(done));
      if (done >= warmup) completed[done - warmup] = core::CycleClock::now();
      ++done;
    }
    return done == total;
  };
  auto push = [&] {
    reap();
    while (next < total && next - done < kSlots) {
      const std::span<std::byte> msg = std::span(memory).subspan((next % kSlots) * r.size, r.size);
      fill_message(msg, next, total, false);
      if (!r.progress.succeeded(r.ep.send_zero_copy(r.conn, msg, next), "send_zero_copy"))
        return false;
      if (next >= warmup) posted[next - warmup] = core::CycleClock::now();
      ++next;
    }
    return next == total;
  };
  if (!push()) r.progress.until(push, "room for a zero-copy send");
  if (Status st = r.ep.shutdown(r.conn); st != Status::kOk) r.progress.failed("shutdown", st);
  if (!reap()) r.progress.until(reap, "the acknowledgement of the last zero-copy sends");
}

SizeResult stream_bw(StreamRound& r) {
  const std::uint64_t total = r.total();
  const std::uint64_t bytes = total * r.size;
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {  // server: read and count, message by message
    std::vector<std::byte> in(r.size);
    std::uint64_t got = 0;
    for (std::uint64_t k = 0; k < total; ++k) {
      recv_exact(r, in, k == 0 ? "data from the client" : "more data");
      got += r.size;
      if (k == 0 || k + 1 == total)
        if (std::string bad = check_message(in, k, total, false, "message"); !bad.empty())
          throw PerfError(bad);
    }
    serve_end(r, got);
    return result;
  }

  std::vector<std::uint64_t> posted(r.cfg.iterations), completed(r.cfg.iterations);
  if (r.cfg.mode == core::Mode::kDirectAccess) {
    stream_bw_zero_copy(r, posted, completed);
  } else {
    stream_bw_copied(r, posted, completed);
  }
  result.server_count = client_end(r, result, bytes, true);
  result.bandwidth = compute_bw(posted, completed, r.size, r.clock.ticks_per_us());
  return result;
}

ulp::StreamConfig stream_config(const PerfConfig& c) {
  ulp::StreamConfig s;
  s.send_buffer = kUlpStreamSendBuffer;
  s.recv_buffer = kUlpStreamRecvBuffer;
  s.max_connections = 2;
  s.max_listeners = 1;
  s.connect_timeout = c.timeout;
  return s;
}

// The stream's connection on a channel to the peer (the server listened before it was made),
// then `test`.
SizeResult on_connection(const SizeRun& a, ulp::StreamEndpoint& ep, core::ChannelId peer,
                         SizeResult (*test)(StreamRound&)) {
  const PerfConfig& c = a.cfg;
  Session& s = *a.session;
  Progress progress(UlpDriver(ep, kStreamLate), c, a.clock, &s);
  ulp::ConnId conn = ulp::kNoConn;
  // "go" before the handshake, not after: no side then blocks on the session while the other
  // still needs its segments answered (a lost ACK of the SYN-ACK is repaired by the server's
  // resend, which a client waiting for "go" would not read; the client's first data carries the
  // ACK again). The client sends nothing more on the session until its count.
  sync_go(s);
  if (c.is_client()) {  // the server listened before the channel was made
    if (Status st = ep.connect(peer, kPort, conn); st != Status::kOk)
      progress.failed("connect", st);
    progress.until(
        [&] {
          ulp::StreamState state;
          if (ep.state(conn, state) != Status::kOk)
            throw PerfError("the connection vanished during its handshake");
          if (state == ulp::StreamState::kEstablished) return true;
          std::byte none[1];
          std::size_t n = 0;
          if (const Status st = ep.recv(conn, std::span(none, 0), n);
              st != Status::kOk && st != Status::kNoResource && st != Status::kInvalidState)
            throw PerfError("connecting to the server's port " + std::to_string(kPort) +
                            " failed: " + std::string(to_string(st)));
          return false;
        },
        "the stream's handshake");
  } else {
    progress.until([&] { return ep.accept(kPort, conn) == Status::kOk; },
                   "the client's connection");
  }
  StreamRound r{a, ep, conn, progress};
  return test(r);
}

// One size of a stream test: a StreamEndpoint (the server listens on kPort), the channel, the
// connection, then `test`.
SizeResult on_stream_endpoint(const SizeRun& a, SizeResult (*test)(StreamRound&)) {
  const PerfConfig& c = a.cfg;
  std::unique_ptr<ulp::StreamEndpoint> ep;
  auto make = [&]() -> std::string {
    ep = std::make_unique<ulp::StreamEndpoint>(ulp_endpoint_config(c), stream_config(c));
    if (!c.is_client())  // before the client can connect: it does after the channel is made
      if (Status st = ep->listen(kPort); st != Status::kOk)
        return "error listening on stream port " + std::to_string(kPort) + ": " +
               std::string(to_string(st));
    return "ok";
  };
  auto run = [&] {
    SizeResult done = on_connection(a, *ep, connect_channel(ep->net(), c, *a.session), test);
    done.endpoint = ep->net().stats();
    return done;
  };
  return agreed_size(a, make, run);
}

}  // namespace

SizeResult run_stream_lat(const SizeRun& a) { return on_stream_endpoint(a, stream_lat); }
SizeResult run_stream_bw(const SizeRun& a) { return on_stream_endpoint(a, stream_bw); }

}  // namespace unet::perf
