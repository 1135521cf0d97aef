#include "test_table.h"

#include <cstddef>
#include <iterator>

namespace unet::perf {
namespace {

#define UNET_PERF_ROW(name, kind, family, figure, transport, mode, iterations, what) \
  {#name,                                                                            \
   TestKind::kind,                                                                   \
   Family::family,                                                                   \
   Figure::figure,                                                                   \
   core::Transport::transport,                                                       \
   core::Mode::mode,                                                                 \
   iterations,                                                                       \
   what},
constexpr TestInfo kTests[] = {UNET_PERF_TESTS(UNET_PERF_ROW)};
#undef UNET_PERF_ROW

constexpr bool in_kind_order() {
  for (std::size_t k = 0; k < std::size(kTests); ++k)
    if (kTests[k].kind != static_cast<TestKind>(k)) return false;
  return true;
}
static_assert(in_kind_order(), "test_info() indexes the table by TestKind");

std::string_view family_help(Family f) noexcept {
  switch (f) {
    case Family::kEndpoint:
      return "base-level send/recv through core::Endpoint";
    case Family::kDirectAccess:
      return "direct-access RDMA WRITE and READ";
    case Family::kActiveMessages:
      return "active messages through uam::Endpoint";
    case Family::kUserLevel:
      return "user-level protocols: ulp's datagrams and byte stream";
  }
  return "?";
}

}  // namespace

std::span<const TestInfo> all_tests() noexcept { return kTests; }

const TestInfo& test_info(TestKind t) noexcept { return kTests[static_cast<std::size_t>(t)]; }

const TestInfo* find_test(std::string_view name) noexcept {
  for (const TestInfo& t : kTests)
    if (t.name == name) return &t;
  return nullptr;
}

std::string test_names(std::string_view separator) {
  std::string names;
  for (const TestInfo& t : kTests) {
    if (!names.empty()) names += separator;
    names += t.name;
  }
  return names;
}

std::string test_help() {
  std::string help = "the test:";
  for (std::size_t k = 0; k < std::size(kTests); ++k) {
    const TestInfo& t = kTests[k];
    const bool first = k == 0 || kTests[k - 1].family != t.family;
    const bool last = k + 1 == std::size(kTests) || kTests[k + 1].family != t.family;
    help += std::string(first ? (k == 0 ? " " : "; ") : ", ") + std::string(t.name);
    if (last) help += " (" + std::string(family_help(t.family)) + ")";
  }
  return help + "; unet_perf --list-tests prints the names, one a line";
}

}  // namespace unet::perf
