// RegistrationCacheStats: the counters of a direct-access endpoint's registration cache
// (Endpoint::registration_stats()). The cache itself is private to core.
#pragma once

#include <cstddef>
#include <cstdint>

namespace unet::core {

// The cache's counters; pinned_bytes never exceeds the bound.
struct RegistrationCacheStats {
  std::uint64_t hits = 0;             // acquires served by a cached registration
  std::uint64_t misses = 0;           // acquires that registered (successful ones only)
  std::uint64_t evictions = 0;        // unleased entries acquire() dropped for room or a union
  std::uint64_t registrations = 0;    // register_region calls that succeeded
  std::uint64_t deregistrations = 0;  // deregister calls
  std::size_t pinned_bytes = 0;       // bytes registered now (live and retired entries)
  std::size_t peak_pinned_bytes = 0;  // highest pinned_bytes seen
  std::size_t entries = 0;            // registrations held now (registrations - deregistrations)
  bool operator==(const RegistrationCacheStats&) const = default;
};

}  // namespace unet::core
