#include "round.h"

namespace unet::perf {

void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(seed, i);
}

std::string check_pattern(std::span<const std::byte> in, std::uint64_t seed) {
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] != pattern(seed, i))
      return "byte " + std::to_string(i) + " is " + std::to_string(std::to_integer<int>(in[i])) +
             ", not " + std::to_string(std::to_integer<int>(pattern(seed, i)));
  return "";
}

void Progress::failed(const char* what, Status s) const {
  throw PerfError(std::string(what) + " failed: " + std::string(to_string(s)));
}

void Progress::device_error(const char* what) const {
  throw PerfError(std::string("device error while waiting for ") + what);
}

void Progress::timed_out(const char* what) const {
  std::string msg =
      "no " + std::string(what) + " within " + std::to_string(cfg_.timeout.count()) + " ms";
  if (cfg_.transport == core::Transport::kUd)
    msg += " (UD is unreliable: a datagram was probably lost)";
  // What this side's endpoint did, so that the two sides' messages show where traffic stopped.
  const core::EndpointStats& st = ep_.stats();
  msg += "; this endpoint sent " + std::to_string(st.sent) + " (" + std::to_string(st.ring_sent) +
         " into a ring, " + std::to_string(st.ring_fallbacks) + " ring fallbacks), received " +
         std::to_string(st.received + st.upcalls) + " (" + std::to_string(st.ring_received) +
         " from its rings), send errors " + std::to_string(st.send_errors) + ", ring credit writes " +
         std::to_string(st.ring_credit_writes) + ", ring protocol errors " +
         std::to_string(st.ring_protocol_errors);
  throw PerfError(msg);
}

}  // namespace unet::perf
