#include "progress.h"

#include <poll.h>

namespace unet::perf {

void Waits::failed(const char* what, Status s) const {
  throw PerfError(std::string(what) + " failed: " + std::string(to_string(s)));
}

void Waits::device_error(const char* what) const {
  throw PerfError(std::string("device error while waiting for ") + what);
}

void Waits::timed_out(const char* what, const std::string& late) const {
  throw PerfError("no " + std::string(what) + " within " + std::to_string(cfg_.timeout.count()) +
                  " ms" + late);
}

void Waits::peer_left(const char* what) const {
  std::string said;
  try {
    said = "'" + watched_->recv_line(std::chrono::milliseconds(1000)) + "'";
  } catch (const std::exception&) {
    said = "nothing (it closed the session)";
  }
  throw PerfError(std::string(cfg_.is_client() ? "the server" : "the client") +
                  " left the round while waiting for " + what + "; it sent " + said);
}

Status sleep_on(int fd, int ms) noexcept {
  pollfd p{fd, POLLIN, 0};
  (void)::poll(&p, 1, ms);  // EINTR: the caller loops again
  return Status::kOk;
}

std::string EndpointDriver::late() const {
  std::string msg;
  if (ep_.config().transport == core::Transport::kUd)
    msg += " (UD is unreliable: a datagram was probably lost)";
  const core::EndpointStats& st = ep_.stats();
  msg += "; this endpoint sent " + std::to_string(st.sent) + " (" + std::to_string(st.ring_sent) +
         " into a ring, " + std::to_string(st.ring_fallbacks) + " ring fallbacks), received " +
         std::to_string(st.received + st.upcalls) + " (" + std::to_string(st.ring_received) +
         " from its rings), send errors " + std::to_string(st.send_errors) +
         ", ring credit writes " + std::to_string(st.ring_credit_writes) +
         ", ring protocol errors " + std::to_string(st.ring_protocol_errors);
  return msg;
}

}  // namespace unet::perf
