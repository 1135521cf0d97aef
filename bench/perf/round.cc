#include "round.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "sizing.h"

namespace unet::perf {
namespace {

struct FreeMemory {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using Memory = std::unique_ptr<std::byte[], FreeMemory>;

// Page-aligned, zeroed, a whole number of pages.
Memory allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  Memory m(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
  if (!m) throw PerfError("cannot allocate " + std::to_string(rounded) + " bytes");
  std::fill_n(m.get(), rounded, std::byte{0});
  return m;
}

}  // namespace

void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(seed, i);
}

std::string check_pattern(std::span<const std::byte> in, std::uint64_t seed, std::size_t from) {
  for (std::size_t i = from; i < in.size(); ++i)
    if (in[i] != pattern(seed, i)) return byte_differs(i, in[i], pattern(seed, i));
  return "";
}

std::string byte_differs(std::size_t i, std::byte got, std::byte want) {
  return "byte " + std::to_string(i) + " is " + std::to_string(std::to_integer<int>(got)) +
         ", not " + std::to_string(std::to_integer<int>(want));
}

SizeResult on_endpoint(const SizeRun& a, SizeResult (*test)(Round&)) {
  const PerfConfig& c = a.cfg;
  const bool direct = c.mode == core::Mode::kDirectAccess;
  const std::size_t memory = 3 * std::size_t{a.size};
  Memory local = direct ? allocate(memory) : nullptr;  // outlives the endpoint
  Memory window = direct ? allocate(memory) : nullptr;
  std::unique_ptr<core::Endpoint> ep;
  auto make = [&]() -> std::string {
    ep = std::make_unique<core::Endpoint>(endpoint_config(c, a.size));
    if (c.transport == core::Transport::kUd && a.size > ep->max_message())
      return "skip " + std::to_string(a.size) + " bytes exceed the UD path MTU (" +
             std::to_string(ep->max_message()) + " bytes)";
    return "ok";
  };
  auto run = [&] {
    Round round{a, *ep, connect_channel(*ep, c, *a.session), {}, {}};
    if (direct) {
      round.local = {local.get(), memory};
      round.window = {window.get(), memory};
    }
    SizeResult done = test(round);
    done.endpoint = ep->stats();
    return done;
  };
  return agreed_size(a, make, run);
}

}  // namespace unet::perf
