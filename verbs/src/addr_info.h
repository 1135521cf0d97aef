// AddrInfo: getaddrinfo() for set-up code, freed on scope exit; throws Error naming host:port.
// Internal to verbs/ (not installed).
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "unet/verbs/error.h"

namespace unet::verbs {

struct AddrInfo {
  addrinfo* list = nullptr;

  // `family` is AF_INET, AF_INET6 or AF_UNSPEC; `passive` for a listening address ("" = any).
  AddrInfo(std::string_view host, std::uint16_t port, int family, bool passive) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    std::string h(host), p = std::to_string(port);
    if (int rc = getaddrinfo(h.empty() ? nullptr : h.c_str(), p.c_str(), &hints, &list))
      throw_error("getaddrinfo", (h.empty() ? "*" : h) + ":" + p, 0, gai_strerror(rc));
  }
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
  AddrInfo(const AddrInfo&) = delete;
  AddrInfo& operator=(const AddrInfo&) = delete;
};

}  // namespace unet::verbs
