// Unit: RegistrationCache over a fake registrar -- hits, page rounding, the pinned-bytes bound,
// LRU eviction, leases, invalidation, failure atomicity. No device.
#include "registration_cache.h"  // private to core: from core/src

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace unet::core {
namespace {

constexpr std::size_t kPage = 4096;
constexpr std::uintptr_t kBase = 0x1000'0000;  // page-aligned; the fake never touches memory

const void* at(std::uintptr_t offset) { return reinterpret_cast<const void*>(kBase + offset); }

// Records every call, tracks the bytes it has pinned itself, refuses on request.
class FakeRegistrar {
 public:
  using Handle = std::uint32_t;
  struct Region {
    std::uintptr_t offset;  // from kBase
    std::size_t len;
    bool operator==(const Region&) const = default;
  };

  Handle register_region(void* addr, std::size_t len) {
    if (fail_next) {
      fail_next = false;
      ++refused;
      throw std::runtime_error("fake: registration refused");
    }
    const Handle h = next_++;
    const Region r{reinterpret_cast<std::uintptr_t>(addr) - kBase, len};
    live.emplace(h, r);
    registered.push_back(r);
    pinned += len;
    peak = std::max(peak, pinned);
    return h;
  }
  void deregister(Handle h) noexcept {
    auto it = live.find(h);
    if (it == live.end()) {
      ++bogus_deregisters;
      return;
    }
    pinned -= it->second.len;
    deregistered.push_back(h);
    live.erase(it);
  }
  std::uint32_t lkey(const Handle& h) const { return 0x10000 + h; }
  std::uint32_t rkey(const Handle& h) const { return 0x20000 + h; }

  bool fail_next = false;
  std::map<Handle, Region> live;     // registered now
  std::vector<Region> registered;    // every successful registration, in order (handle = index+1)
  std::vector<Handle> deregistered;  // every deregistration, in order
  std::size_t pinned = 0, peak = 0, refused = 0, bogus_deregisters = 0;

 private:
  Handle next_ = 1;
};

static_assert(Registrar<FakeRegistrar>);
struct NotARegistrar {
  using Handle = int;
  Handle register_region(void*, std::size_t);
  void deregister(Handle);  // not noexcept
  std::uint32_t lkey(const Handle&);
  std::uint32_t rkey(const Handle&);
};
static_assert(!Registrar<NotARegistrar>);
static_assert(!Registrar<int>);

using Cache = RegistrationCache<FakeRegistrar>;
using Lease = Cache::Lease;
static_assert(!std::is_copy_constructible_v<Lease> && !std::is_copy_assignable_v<Lease>);
static_assert(std::is_nothrow_move_constructible_v<Lease> &&
              std::is_nothrow_move_assignable_v<Lease>);

// Counts allocations made by the cache's containers.
template <class T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(std::size_t* n) noexcept : count(n) {}
  template <class U>
  CountingAllocator(const CountingAllocator<U>& o) noexcept : count(o.count) {}
  T* allocate(std::size_t n) {
    ++*count;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
  template <class U>
  bool operator==(const CountingAllocator<U>& o) const noexcept {
    return count == o.count;
  }
  std::size_t* count;
};

TEST(RegistrationCache, HitAfterMissDoesNotRegisterAgain) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease a, b;
  ASSERT_EQ(cache.acquire(at(0), 100, a), Status::kOk);
  ASSERT_EQ(cache.acquire(at(0), 100, b), Status::kOk);
  EXPECT_EQ(reg.registered.size(), 1u);
  EXPECT_EQ(a.handle(), b.handle());
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  EXPECT_EQ(cache.stats().registrations, 1u);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().pinned_bytes, kPage);
}

TEST(RegistrationCache, LeaseReportsTheCoveringRegistration) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease l;
  ASSERT_EQ(cache.acquire(at(kPage + 10), 20, l), Status::kOk);
  ASSERT_TRUE(l);
  EXPECT_EQ(l.region_addr(), at(kPage));
  EXPECT_EQ(l.region_length(), kPage);
  EXPECT_EQ(l.lkey(), reg.lkey(l.handle()));
  EXPECT_EQ(l.rkey(), reg.rkey(l.handle()));
  EXPECT_EQ(reg.live.at(l.handle()), (FakeRegistrar::Region{kPage, kPage}));
}

TEST(RegistrationCache, MissRegistersThePageRoundedRange) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease a, b, c;
  ASSERT_EQ(cache.acquire(at(100), 10, a), Status::kOk);               // inside page 0
  ASSERT_EQ(cache.acquire(at(3 * kPage - 1), 2, b), Status::kOk);      // straddles pages 2 and 3
  ASSERT_EQ(cache.acquire(at(8 * kPage), 2 * kPage, c), Status::kOk);  // exactly pages 8, 9
  ASSERT_EQ(reg.registered.size(), 3u);
  EXPECT_EQ(reg.registered[0], (FakeRegistrar::Region{0, kPage}));
  EXPECT_EQ(reg.registered[1], (FakeRegistrar::Region{2 * kPage, 2 * kPage}));
  EXPECT_EQ(reg.registered[2], (FakeRegistrar::Region{8 * kPage, 2 * kPage}));
  EXPECT_EQ(cache.stats().pinned_bytes, 5 * kPage);
  EXPECT_EQ(reg.pinned, 5 * kPage);

  FakeRegistrar reg64;
  Cache big(reg64, 1 << 20, 65536);  // 64 KiB pages
  Lease d;
  ASSERT_EQ(big.acquire(at(70000), 100, d), Status::kOk);
  EXPECT_EQ(reg64.registered.at(0), (FakeRegistrar::Region{65536, 65536}));
  EXPECT_EQ(big.page_size(), 65536u);
}

TEST(RegistrationCache, SubRangeOfARegistrationIsAHit) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease whole, part, edge;
  ASSERT_EQ(cache.acquire(at(0), 4 * kPage, whole), Status::kOk);
  ASSERT_EQ(cache.acquire(at(kPage + 7), kPage, part), Status::kOk);
  ASSERT_EQ(cache.acquire(at(4 * kPage - 1), 1, edge), Status::kOk);  // the last byte
  EXPECT_EQ(reg.registered.size(), 1u);
  EXPECT_EQ(part.handle(), whole.handle());
  EXPECT_EQ(edge.handle(), whole.handle());
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().misses, 1u);
}

TEST(RegistrationCache, HitAllocatesNothing) {
  FakeRegistrar reg;
  std::size_t allocations = 0;
  using Counted = RegistrationCache<FakeRegistrar, CountingAllocator<std::byte>>;
  Counted cache(reg, 64 * kPage, kPage, CountingAllocator<std::byte>(&allocations));
  Counted::Lease a, b, c;
  ASSERT_EQ(cache.acquire(at(0), kPage, a), Status::kOk);
  ASSERT_EQ(cache.acquire(at(4 * kPage), kPage, b), Status::kOk);
  EXPECT_GT(allocations, 0u);  // the miss allocated: the counter sees the containers
  const std::size_t before = allocations;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(cache.acquire(at(i % 2 ? 0 : 4 * kPage), 64, c), Status::kOk);
    c.release();
  }
  EXPECT_EQ(allocations, before);
  EXPECT_EQ(cache.stats().hits, 100u);
  EXPECT_EQ(reg.registered.size(), 2u);
}

TEST(RegistrationCache, EvictsTheLeastRecentlyUsedUnleasedEntry) {
  FakeRegistrar reg;
  Cache cache(reg, 3 * kPage);
  Lease l;
  for (std::uintptr_t p : {0, 2, 4}) {  // A, B, C: handles 1, 2, 3
    ASSERT_EQ(cache.acquire(at(p * kPage), 1, l), Status::kOk);
    l.release();
  }
  ASSERT_EQ(cache.acquire(at(0), 1, l), Status::kOk);  // touch A: B is now least recent
  l.release();
  ASSERT_EQ(cache.acquire(at(6 * kPage), 1, l), Status::kOk);  // D evicts B
  l.release();
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{2});
  ASSERT_EQ(cache.acquire(at(8 * kPage), 1, l), Status::kOk);  // E evicts C
  l.release();
  EXPECT_EQ(reg.deregistered, (std::vector<FakeRegistrar::Handle>{2, 3}));
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(reg.pinned, 3 * kPage);
  EXPECT_EQ(cache.stats().peak_pinned_bytes, 3 * kPage);
  ASSERT_EQ(cache.acquire(at(0), 1, l), Status::kOk);  // A survived
  EXPECT_EQ(l.handle(), 1u);
}

TEST(RegistrationCache, TheEntryAcquiredLastIsFoundFirstAndStaysTheMostRecent) {
  FakeRegistrar reg;
  Cache cache(reg, 2 * kPage);
  Lease l;
  for (std::uintptr_t p : {0, 2}) {  // A, B: handles 1, 2; B acquired last
    ASSERT_EQ(cache.acquire(at(p * kPage), 1, l), Status::kOk);
    l.release();
  }
  for (int i = 0; i < 3; ++i) {  // three parts of B: hits on the entry acquired last
    ASSERT_EQ(cache.acquire(at(2 * kPage + 8 * i), 8, l), Status::kOk);
    EXPECT_EQ(l.handle(), 2u);
    l.release();
  }
  EXPECT_EQ(cache.stats().hits, 3u);
  EXPECT_EQ(cache.stats().misses, 2u);
  ASSERT_EQ(cache.acquire(at(4 * kPage), 1, l), Status::kOk);  // C evicts A, the least recent
  l.release();
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  // D evicts B, now the least recent: its leases from those hits all ended.
  ASSERT_EQ(cache.acquire(at(6 * kPage), 1, l), Status::kOk);
  l.release();
  EXPECT_EQ(reg.deregistered, (std::vector<FakeRegistrar::Handle>{1, 2}));
  EXPECT_EQ(cache.stats().entries, 2u);
}

TEST(RegistrationCache, LeasedEntriesAreNeverEvicted) {
  FakeRegistrar reg;
  Cache cache(reg, 2 * kPage);
  Lease a, b, c;
  ASSERT_EQ(cache.acquire(at(0), 1, a), Status::kOk);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, b), Status::kOk);
  const RegistrationCacheStats before = cache.stats();
  EXPECT_EQ(cache.acquire(at(4 * kPage), 1, c), Status::kNoResource);
  EXPECT_FALSE(c);
  EXPECT_EQ(cache.stats(), before);
  EXPECT_EQ(reg.registered.size(), 2u);
  EXPECT_TRUE(reg.deregistered.empty());

  a.release();  // A is now evictable, B still is not (and is more recent anyway)
  ASSERT_EQ(cache.acquire(at(4 * kPage), 1, c), Status::kOk);
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  EXPECT_TRUE(reg.live.contains(b.handle()));
  EXPECT_EQ(reg.pinned, 2 * kPage);
}

TEST(RegistrationCache, TooLargeRequestChangesNothing) {
  FakeRegistrar reg;
  Cache cache(reg, 4 * kPage);
  Lease a, big;
  ASSERT_EQ(cache.acquire(at(0), 1, a), Status::kOk);
  a.release();  // an evictable entry that must survive the refused request
  const RegistrationCacheStats before = cache.stats();
  EXPECT_EQ(cache.acquire(at(8 * kPage), 4 * kPage + 1, big), Status::kNoResource);
  EXPECT_EQ(cache.acquire(at(8 * kPage + 1), 4 * kPage, big), Status::kNoResource);  // 5 pages
  EXPECT_FALSE(big);
  EXPECT_EQ(cache.stats(), before);
  EXPECT_EQ(reg.registered.size(), 1u);
  EXPECT_TRUE(reg.deregistered.empty());
  ASSERT_EQ(cache.acquire(at(8 * kPage), 4 * kPage, big), Status::kOk);  // exactly the bound fits
  EXPECT_EQ(reg.pinned, 4 * kPage);
}

TEST(RegistrationCache, InvalidArgumentsChangeNothing) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease l;
  EXPECT_EQ(cache.acquire(nullptr, 10, l), Status::kInvalidArgument);
  EXPECT_EQ(cache.acquire(at(0), 0, l), Status::kInvalidArgument);
  EXPECT_EQ(cache.acquire(reinterpret_cast<const void*>(UINTPTR_MAX - 10), 100, l),
            Status::kInvalidArgument);  // wraps around the address space
  EXPECT_EQ(cache.acquire(reinterpret_cast<const void*>(UINTPTR_MAX - 10), 5, l),
            Status::kInvalidArgument);  // its last page cannot be rounded up
  EXPECT_FALSE(l);
  EXPECT_EQ(cache.stats(), RegistrationCacheStats{});
  EXPECT_TRUE(reg.registered.empty());
  EXPECT_THROW(Cache(reg, kPage, 3000), std::invalid_argument);
  EXPECT_THROW(Cache(reg, kPage, 0), std::invalid_argument);
}

TEST(RegistrationCache, RegistrarThrowingIsDeviceErrorAndChangesNothing) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease held, l;
  ASSERT_EQ(cache.acquire(at(0), 1, held), Status::kOk);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);  // `l` holds a lease already
  const FakeRegistrar::Handle old = l.handle();
  const RegistrationCacheStats before = cache.stats();
  reg.fail_next = true;
  EXPECT_EQ(cache.acquire(at(8 * kPage), 1, l), Status::kDeviceError);
  EXPECT_EQ(reg.refused, 1u);
  EXPECT_EQ(cache.stats(), before);
  ASSERT_TRUE(l);  // untouched on failure
  EXPECT_EQ(l.handle(), old);
  EXPECT_EQ(reg.live.size(), 2u);
  // An overlapping miss (which would merge with the entry under `l`) is just as atomic.
  reg.fail_next = true;
  EXPECT_EQ(cache.acquire(at(2 * kPage), 2 * kPage, l), Status::kDeviceError);
  EXPECT_EQ(cache.stats(), before);
  EXPECT_TRUE(reg.live.contains(old));
  // And the cache still works afterwards.
  ASSERT_EQ(cache.acquire(at(8 * kPage), 1, l), Status::kOk);
  EXPECT_EQ(reg.registered.size(), 3u);
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_TRUE(reg.live.contains(old));  // released by the move-assignment, still cached
}

TEST(RegistrationCache, RegistrarThrowingAfterEvictionLeavesVictimsEvicted) {
  // Documented exception to "changes nothing": room is made before registering, so that the
  // bound holds at every instant; victims evicted for a registration that then fails stay gone.
  FakeRegistrar reg;
  Cache cache(reg, 2 * kPage);
  Lease a, l;
  ASSERT_EQ(cache.acquire(at(0), 1, a), Status::kOk);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);
  l.release();
  reg.fail_next = true;
  EXPECT_EQ(cache.acquire(at(4 * kPage), 1, l), Status::kDeviceError);
  EXPECT_FALSE(l);
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{2});
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().pinned_bytes, kPage);
  EXPECT_EQ(reg.pinned, kPage);
  EXPECT_TRUE(reg.live.contains(a.handle()));
}

TEST(RegistrationCache, OverlapRegistersTheUnionOfUnleasedEntries) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease l;
  ASSERT_EQ(cache.acquire(at(0), 1, l), Status::kOk);          // [0, 1) pages: handle 1
  ASSERT_EQ(cache.acquire(at(3 * kPage), 1, l), Status::kOk);  // [3, 4): handle 2
  ASSERT_EQ(cache.acquire(at(8 * kPage), 1, l), Status::kOk);  // [8, 9): handle 3, untouched
  l.release();
  ASSERT_EQ(cache.acquire(at(kPage / 2), 3 * kPage, l), Status::kOk);  // pages [0, 4)
  EXPECT_EQ(reg.registered.back(), (FakeRegistrar::Region{0, 4 * kPage}));
  EXPECT_EQ(reg.deregistered, (std::vector<FakeRegistrar::Handle>{1, 2}));
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_EQ(reg.pinned, 5 * kPage);
  Lease hit;
  ASSERT_EQ(cache.acquire(at(3 * kPage), kPage, hit), Status::kOk);
  EXPECT_EQ(hit.handle(), l.handle());
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(RegistrationCache, OverlapRetiresLeasedEntriesUntilTheirLastLease) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease a, u;
  ASSERT_EQ(cache.acquire(at(0), 2 * kPage, a), Status::kOk);      // handle 1 = pages [0, 2)
  ASSERT_EQ(cache.acquire(at(kPage), 2 * kPage, u), Status::kOk);  // pages [1, 3) overlap it
  EXPECT_EQ(reg.registered.back(), (FakeRegistrar::Region{0, 3 * kPage}));  // the union
  EXPECT_TRUE(reg.live.contains(1));                 // leased: retired, not deregistered
  EXPECT_EQ(cache.stats().pinned_bytes, 5 * kPage);  // counted twice while `a` holds it
  EXPECT_EQ(cache.stats().entries, 2u);
  Lease again;
  ASSERT_EQ(cache.acquire(at(0), 1, again), Status::kOk);
  EXPECT_EQ(again.handle(), u.handle());  // the retired entry is never handed out again
  a.release();
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  EXPECT_EQ(cache.stats().pinned_bytes, 3 * kPage);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().evictions, 0u);
}

TEST(RegistrationCache, OverlapFallsBackToTheRequestedPagesWhenTheUnionDoesNotFit) {
  FakeRegistrar reg;
  Cache cache(reg, 4 * kPage);
  Lease a, l;
  ASSERT_EQ(cache.acquire(at(0), 2 * kPage, a), Status::kOk);  // leased, pages [0, 2)
  // The union [0, 3) on top of the leased 2 pages would be 5 > 4; pages [1, 3) alone fit.
  ASSERT_EQ(cache.acquire(at(kPage), 2 * kPage, l), Status::kOk);
  EXPECT_EQ(reg.registered.back(), (FakeRegistrar::Region{kPage, 2 * kPage}));
  EXPECT_TRUE(reg.live.contains(a.handle()));  // retired, still leased
  EXPECT_EQ(reg.pinned, 4 * kPage);
  Lease b;  // page 0 is no longer cached (its entry is retired): a miss
  EXPECT_EQ(cache.acquire(at(0), 1, b), Status::kNoResource);
  a.release();
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  ASSERT_EQ(cache.acquire(at(0), 1, b), Status::kOk);
  EXPECT_EQ(reg.registered.back(), (FakeRegistrar::Region{0, kPage}));
  EXPECT_EQ(reg.peak, 4 * kPage);
}

TEST(RegistrationCache, OverlapThatCannotFitChangesNothing) {
  FakeRegistrar reg;
  Cache cache(reg, 3 * kPage);
  Lease a, l;
  ASSERT_EQ(cache.acquire(at(0), 2 * kPage, a), Status::kOk);  // leased, pages [0, 2)
  const RegistrationCacheStats before = cache.stats();
  // Union [0, 3): 3 more pages; pages [1, 3) alone: 2 more. Either way over 3 with `a` held.
  EXPECT_EQ(cache.acquire(at(kPage), 2 * kPage, l), Status::kNoResource);
  EXPECT_EQ(cache.stats(), before);
  EXPECT_EQ(reg.registered.size(), 1u);
  EXPECT_TRUE(reg.deregistered.empty());
  a.release();  // unleased now: the union replaces it, dropped before registering
  ASSERT_EQ(cache.acquire(at(kPage), 2 * kPage, l), Status::kOk);
  EXPECT_EQ(reg.registered.back(), (FakeRegistrar::Region{0, 3 * kPage}));
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  EXPECT_EQ(reg.peak, 3 * kPage);  // the bound held throughout
}

TEST(RegistrationCache, InvalidateDropsUnleasedEntries) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease l;
  for (std::uintptr_t p : {0, 2, 4}) {
    ASSERT_EQ(cache.acquire(at(p * kPage), 1, l), Status::kOk);
    l.release();
  }
  cache.invalidate(at(2 * kPage + 100), 2 * kPage);  // touches pages 2..4: entries 2 and 3
  EXPECT_EQ(reg.deregistered, (std::vector<FakeRegistrar::Handle>{2, 3}));
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().evictions, 0u);
  cache.invalidate(at(kPage), kPage);  // nothing there
  cache.invalidate(at(0), 0);          // empty: no-op
  EXPECT_EQ(cache.stats().entries, 1u);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);  // a miss again
  EXPECT_EQ(l.handle(), 4u);
  EXPECT_EQ(cache.stats().misses, 4u);
}

TEST(RegistrationCache, InvalidatedLeasedEntryIsStale) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease a, b;
  ASSERT_EQ(cache.acquire(at(0), kPage, a), Status::kOk);
  cache.invalidate(at(0), kPage);
  EXPECT_TRUE(reg.deregistered.empty());  // still leased
  EXPECT_TRUE(reg.live.contains(a.handle()));
  ASSERT_EQ(cache.acquire(at(0), kPage, b), Status::kOk);  // new memory at the same address
  EXPECT_NE(b.handle(), a.handle());                       // not the stale registration
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(cache.stats().pinned_bytes, 2 * kPage);
  const FakeRegistrar::Handle stale = a.handle();
  a.release();
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{stale});
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(reg.pinned, kPage);
}

TEST(RegistrationCache, FlushDeregistersUnleasedEntriesOnly) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease keep, l;
  ASSERT_EQ(cache.acquire(at(0), 1, keep), Status::kOk);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);
  ASSERT_EQ(cache.acquire(at(4 * kPage), 1, l), Status::kOk);
  l.release();
  cache.flush();
  EXPECT_EQ(reg.deregistered, (std::vector<FakeRegistrar::Handle>{2, 3}));
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().deregistrations, 2u);
  EXPECT_EQ(reg.live.size(), 1u);
  Lease hit;
  ASSERT_EQ(cache.acquire(at(0), 1, hit), Status::kOk);  // the leased entry stays cached
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(RegistrationCache, DestructorDeregistersEverything) {
  FakeRegistrar reg;
  {
    Cache cache(reg, 64 * kPage);
    Lease l, stale;
    ASSERT_EQ(cache.acquire(at(0), 1, l), Status::kOk);
    ASSERT_EQ(cache.acquire(at(2 * kPage), 3 * kPage, l), Status::kOk);
    ASSERT_EQ(cache.acquire(at(8 * kPage), 1, stale), Status::kOk);
    cache.invalidate(at(8 * kPage), 1);  // retired, deregistered when `stale` ends
    stale.release();
    ASSERT_EQ(cache.acquire(at(8 * kPage), 1, l), Status::kOk);
    l.release();  // leases end before the cache, as required
    EXPECT_EQ(reg.live.size(), 3u);
  }
  EXPECT_TRUE(reg.live.empty());
  EXPECT_EQ(reg.pinned, 0u);
  EXPECT_EQ(reg.deregistered.size(), reg.registered.size());
  EXPECT_EQ(reg.bogus_deregisters, 0u);
}

TEST(RegistrationCache, LeaseMoveSemantics) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease a;
  EXPECT_FALSE(a);
  ASSERT_EQ(cache.acquire(at(0), 1, a), Status::kOk);
  const FakeRegistrar::Handle h = a.handle();
  Lease b(std::move(a));
  EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  ASSERT_TRUE(b);
  EXPECT_EQ(b.handle(), h);

  cache.invalidate(at(0), 1);  // stale: its deregistration tracks b's single use
  Lease c;
  c = std::move(b);
  EXPECT_FALSE(b);                        // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(reg.deregistered.empty());  // moving transfers the use, does not end it
  Lease& self = c;
  c = std::move(self);
  EXPECT_TRUE(c);
  a.release();  // releasing an empty lease is a no-op
  b = Lease();
  EXPECT_TRUE(reg.deregistered.empty());

  Lease d;
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, d), Status::kOk);
  d = std::move(c);  // d's own lease ends (entry 2 stays cached); it takes c's stale one
  EXPECT_TRUE(reg.deregistered.empty());
  EXPECT_EQ(d.handle(), h);
  d.release();
  d.release();  // idempotent
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{h});
  cache.flush();  // entry 2 is unleased now, so d's move-assignment did release it
  EXPECT_EQ(reg.deregistered.size(), 2u);
  EXPECT_TRUE(reg.live.empty());
}

TEST(RegistrationCache, AcquireIntoAHeldLeaseReleasesItOnSuccess) {
  FakeRegistrar reg;
  Cache cache(reg, 64 * kPage);
  Lease l;
  ASSERT_EQ(cache.acquire(at(0), 1, l), Status::kOk);
  cache.invalidate(at(0), 1);  // l's entry is stale: it goes when l lets go of it
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);
  EXPECT_EQ(reg.deregistered, std::vector<FakeRegistrar::Handle>{1});
  EXPECT_EQ(l.handle(), 2u);
  ASSERT_EQ(cache.acquire(at(2 * kPage), 1, l), Status::kOk);  // a hit into the same lease
  EXPECT_EQ(l.handle(), 2u);
  cache.flush();
  EXPECT_TRUE(reg.live.contains(2));  // exactly one use remains
  l.release();
  cache.flush();
  EXPECT_TRUE(reg.live.empty());
}

// Random acquires, releases, invalidations, flushes and refusals; after every step the fake's own
// books must agree with the cache and with the bound, and no stale registration is handed out.
TEST(RegistrationCache, RandomizedOperationsNeverExceedTheBound) {
  constexpr std::size_t kBound = 16 * kPage;
  constexpr std::size_t kSpace = 64 * kPage;
  FakeRegistrar reg;
  std::mt19937_64 rng(20240611);
  auto pick = [&](std::uint64_t n) { return static_cast<std::uintptr_t>(rng() % n); };
  std::set<FakeRegistrar::Handle> forbidden;  // live when their memory was invalidated
  std::uint64_t successes = 0, no_resource = 0;
  {
    Cache cache(reg, kBound);
    std::vector<std::pair<Lease, FakeRegistrar::Handle>> held;  // with the handle it was given
    auto holds = [&](FakeRegistrar::Handle h) {
      return std::any_of(held.begin(), held.end(), [h](const auto& p) { return p.second == h; });
    };
    auto check = [&](int step) {
      SCOPED_TRACE(step);
      const RegistrationCacheStats& s = cache.stats();
      ASSERT_LE(reg.pinned, kBound);
      ASSERT_EQ(reg.pinned, s.pinned_bytes);
      ASSERT_EQ(reg.live.size(), s.entries);
      ASSERT_EQ(reg.registered.size(), s.registrations);
      ASSERT_EQ(reg.deregistered.size(), s.deregistrations);
      ASSERT_EQ(s.hits + s.misses, successes);
      ASSERT_EQ(reg.bogus_deregisters, 0u);
      for (const auto& [l, h] : held) {
        ASSERT_TRUE(reg.live.contains(h)) << "a leased registration was deregistered";
        ASSERT_EQ(l.handle(), h);
      }
    };
    for (int step = 0; step < 10000; ++step) {
      const std::uint64_t op = pick(100);
      if (op < 50) {
        const std::uintptr_t off = pick(kSpace - 1);
        std::size_t len = 1 + pick(3 * kPage);
        if (pick(50) == 0) len = kBound + 1 + pick(kPage);  // never fits
        len = std::min<std::size_t>(len, kSpace - off);
        if (pick(20) == 0) reg.fail_next = true;
        const RegistrationCacheStats before = cache.stats();
        const std::size_t registered = reg.registered.size();
        const bool nothing_leased = held.empty();
        Lease l;
        const Status st = cache.acquire(at(off), len, l);
        if (st == Status::kOk) {
          ++successes;
          ASSERT_TRUE(l);
          const auto start = reinterpret_cast<std::uintptr_t>(l.region_addr()) - kBase;
          ASSERT_LE(start, off);
          ASSERT_LE(off + len, start + l.region_length());
          ASSERT_EQ(reg.live.at(l.handle()), (FakeRegistrar::Region{start, l.region_length()}));
          ASSERT_EQ(l.lkey(), reg.lkey(l.handle()));
          ASSERT_FALSE(forbidden.contains(l.handle())) << "stale registration handed out";
          if (held.size() >= 8) held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick(8)));
          const FakeRegistrar::Handle h = l.handle();
          held.emplace_back(std::move(l), h);
        } else if (st == Status::kNoResource) {
          ++no_resource;
          ASSERT_EQ(cache.stats(), before);
          ASSERT_EQ(reg.registered.size(), registered);
          const std::size_t pages = ((off + len + kPage - 1) / kPage - off / kPage) * kPage;
          // With nothing leased, anything within the bound fits.
          ASSERT_FALSE(nothing_leased && pages <= kBound) << "refused " << off << "+" << len;
        } else {
          ASSERT_EQ(st, Status::kDeviceError);
          ASSERT_EQ(reg.registered.size(), registered);
          ASSERT_EQ(cache.stats().registrations, before.registrations);
          ASSERT_EQ(cache.stats().hits + cache.stats().misses, before.hits + before.misses);
        }
        reg.fail_next = false;
      } else if (op < 85) {
        if (!held.empty())
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick(held.size())));
      } else if (op < 98) {
        const std::uintptr_t off = pick(kSpace);
        const std::size_t len = 1 + pick(2 * kPage);
        for (const auto& [h, r] : reg.live) {
          if (r.offset < off + len && off < r.offset + r.len) forbidden.insert(h);
        }
        cache.invalidate(at(off), len);
        for (const auto& [h, r] : reg.live) {  // a forbidden one lingers only while leased
          if (!forbidden.contains(h)) continue;
          ASSERT_TRUE(holds(h));
        }
      } else {
        cache.flush();
        for (const auto& [h, r] : reg.live) {
          ASSERT_TRUE(holds(h));
        }
      }
      check(step);
      if (HasFatalFailure()) return;
    }
    // The sequence exercised every path (the seeded run's counts: core/README.md).
    EXPECT_GT(cache.stats().hits, 200u);
    EXPECT_GT(cache.stats().misses, 1000u);
    EXPECT_GT(cache.stats().evictions, 500u);
    EXPECT_GT(no_resource, 100u);
    EXPECT_GT(forbidden.size(), 10u);
    EXPECT_GT(reg.refused, 10u);
    held.clear();
    cache.flush();
    EXPECT_TRUE(reg.live.empty());
    EXPECT_EQ(cache.stats().pinned_bytes, 0u);
    EXPECT_LE(cache.stats().peak_pinned_bytes, kBound);
  }
  EXPECT_LE(reg.peak, kBound);
  EXPECT_EQ(reg.bogus_deregisters, 0u);
}

}  // namespace
}  // namespace unet::core
