// RegistrationCache: on-demand registration (pinning) of application memory for direct-access
// endpoints, with a bound on pinned bytes and LRU eviction -- U-Net/MM's NI TLB, rebuilt on verbs.
// Private to core (its counters are public: registration_cache_stats.h); tests and bench/micro
// include it from core/src.
//
// acquire(addr, len) leases a registration covering [addr, addr+len). A hit (one cached entry
// covers the range) is an O(log n) lookup, O(1) on the entry acquired last: no registrar call, no
// allocation. A miss registers the page-aligned range (start rounded down, end up to page_size),
// first evicting the least recently acquired entries nobody leases if the bound needs it. Pinned
// bytes (live entries plus retired ones still leased) never exceed the bound, at any instant; a
// request that cannot fit returns kNoResource and changes nothing.
//
// Overlap policy: cached entries never overlap one another. A miss overlapping cached entries
// registers the UNION of its pages and theirs (fewer, larger registrations), or only its own pages
// when the union would not fit. Either way the overlapped entries are replaced: deregistered if
// unleased (counted as evictions), else retired -- never handed out again, deregistered when their
// last lease ends, and until then counted toward the bound (as the kernel counts pinned pages).
//
// invalidate(addr, len) must be called before the application frees or unmaps memory: overlapping
// entries are deregistered, or retired if leased. Leases must not outlive the cache (asserted in
// debug builds). Not thread-safe: one endpoint, one thread.
//
// The Registrar policy (checked by the concept below) does the actual work:
//   using Handle = ...;                                    // copyable, e.g. ibv_mr*
//   Handle register_region(void* addr, std::size_t len);    // may throw on failure
//   void deregister(Handle h) noexcept;
//   std::uint32_t lkey(const Handle&), rkey(const Handle&); // the registration's keys
// register_region only sees page-aligned ranges, so page_size should be the size of the pages
// backing the memory (rounding past them may reach unmapped memory: registration then fails).
// Over verbs: Handle = ibv_mr*, ibv_reg_mr (throw on NULL) / ibv_dereg_mr, mr->lkey / mr->rkey.
#pragma once

#include <algorithm>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "unet/core/registration_cache_stats.h"
#include "unet/status.h"

namespace unet::core {

// The Registrar policy described above. (clang-format 14 splits a `noexcept` requirement.)
// clang-format off
template <class R>
concept Registrar = std::copyable<typename R::Handle> &&
    requires(R& r, void* addr, std::size_t len, const typename R::Handle& h) {
      { r.register_region(addr, len) } -> std::same_as<typename R::Handle>;
      { r.deregister(h) } noexcept;
      { r.lkey(h) } -> std::convertible_to<std::uint32_t>;
      { r.rkey(h) } -> std::convertible_to<std::uint32_t>;
    };
// clang-format on

// `Alloc` (rebound to the node types) lets tests count allocations or callers supply a pool.
template <Registrar R, class Alloc = std::allocator<std::byte>>
class RegistrationCache {
  struct Entry {
    std::uintptr_t start;
    std::size_t len;
    typename R::Handle handle;
    std::uint32_t lkey, rkey;
    std::size_t uses = 0;  // live leases
    bool retired = false;  // in retired_: never handed out again, deregistered at uses == 0
    std::uintptr_t end() const noexcept { return start + len; }
  };
  template <class T>
  using Rebind = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
  using List = std::list<Entry, Rebind<Entry>>;  // nodes never move: leases keep iterators
  using Iter = typename List::iterator;
  using Index =
      std::map<std::uintptr_t, Iter, std::less<>, Rebind<std::pair<const std::uintptr_t, Iter>>>;

 public:
  // The registrar's handle of one registration (e.g. its memory region).
  using Handle = typename R::Handle;

  // Holds one use of a registration covering the acquired range. Movable, not copyable.
  class Lease {
   public:
    Lease() noexcept = default;
    Lease(Lease&& o) noexcept : cache_(std::exchange(o.cache_, nullptr)), it_(o.it_) {}
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        release();
        cache_ = std::exchange(o.cache_, nullptr);
        it_ = o.it_;
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }

    // Ends the lease now; no-op when empty. O(1), plus a deregistration if the entry was retired.
    void release() noexcept {
      if (cache_ != nullptr) std::exchange(cache_, nullptr)->release(it_);
    }
    // True while the lease holds a registration. O(1).
    explicit operator bool() const noexcept { return cache_ != nullptr; }
    // Keys, handle and extent of the covering registration (lease must be non-empty). O(1).
    std::uint32_t lkey() const noexcept { return entry().lkey; }
    std::uint32_t rkey() const noexcept { return entry().rkey; }
    const Handle& handle() const noexcept { return entry().handle; }
    void* region_addr() const noexcept { return reinterpret_cast<void*>(entry().start); }
    std::size_t region_length() const noexcept { return entry().len; }

   private:
    friend class RegistrationCache;
    Lease(RegistrationCache* c, Iter it) noexcept : cache_(c), it_(it) {}
    const Entry& entry() const noexcept {
      assert(cache_ != nullptr && "empty Lease");
      return *it_;
    }
    RegistrationCache* cache_ = nullptr;
    Iter it_{};
  };

  // Caches registrations made through `registrar` (which must outlive the cache), pinning at most
  // `max_pinned_bytes`. Throws std::invalid_argument unless page_size is a power of two. O(1).
  RegistrationCache(R& registrar, std::size_t max_pinned_bytes, std::size_t page_size = 4096,
                    const Alloc& alloc = Alloc())
      : registrar_(registrar),
        max_(max_pinned_bytes),
        page_(page_size),
        lru_(Rebind<Entry>(alloc)),
        retired_(Rebind<Entry>(alloc)),
        index_(typename Index::allocator_type(alloc)) {
    if (page_size == 0 || (page_size & (page_size - 1)) != 0)
      throw std::invalid_argument("RegistrationCache: page_size must be a power of two");
  }
  // Deregisters every entry. No lease may remain (asserted in debug builds). O(n).
  ~RegistrationCache() {
    for (const Entry& x : lru_) {
      assert(x.uses == 0 && "a RegistrationCache::Lease outlived its cache");
      registrar_.deregister(x.handle);
    }
    assert(retired_.empty() && "a RegistrationCache::Lease outlived its cache");
    for (const Entry& x : retired_) registrar_.deregister(x.handle);
  }
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // Leases a registration covering [addr, addr+len) into `out` (whose old lease is released on
  // success; on failure `out` is untouched). Hit: O(1) on the entry acquired last, else
  // O(log n); no allocation, no registrar call.
  // Miss: O(n) worst case plus one registration. kInvalidArgument for null/empty/wrapping ranges;
  // kNoResource when it cannot fit under the bound even after evicting every unleased entry (or
  // on allocation failure); kDeviceError when the registrar throws. Every failure changes nothing,
  // except that kDeviceError after evicting to make room leaves those victims evicted.
  [[nodiscard]] Status acquire(const void* addr, std::size_t len, Lease& out) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    if (addr == nullptr || len == 0 || len > UINTPTR_MAX - a) return Status::kInvalidArgument;
    // The most recently acquired entry first (the LRU list's last): an application moving from
    // or into one buffer again and again finds it without the index or a relink.
    if (!lru_.empty() && a >= lru_.back().start && a + len <= lru_.back().end())
      return hit(std::prev(lru_.end()), out);
    if (auto it = index_.upper_bound(a); it != index_.begin()) {
      const Iter x = std::prev(it)->second;  // the only entry that can cover: start <= a
      if (a + len <= x->end()) {
        lru_.splice(lru_.end(), lru_, x);  // most recently used; relinks, no allocation
        return hit(x, out);
      }
    }
    return miss(a, a + len, out);
  }

  // Forgets [addr, addr+len) before the application frees or unmaps it: overlapping entries are
  // deregistered, or retired if leased. O(log n + k) plus k deregistrations.
  void invalidate(const void* addr, std::size_t len) noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    if (len == 0) return;
    const std::uintptr_t end = len > UINTPTR_MAX - a ? UINTPTR_MAX : a + len;
    for (auto it = first_overlap(a); it != index_.end() && it->first < end; it = index_.erase(it)) {
      if (it->second->uses == 0) {
        deregister(it->second, lru_);
      } else {
        retire(it->second);
      }
    }
  }

  // Deregisters every entry nobody leases. O(n) plus the deregistrations.
  void flush() noexcept {
    for (auto it = index_.begin(); it != index_.end();) {
      const Iter x = it->second;
      it = x->uses == 0 ? index_.erase(it) : std::next(it);
      if (x->uses == 0) deregister(x, lru_);
    }
  }

  // Counters and current occupancy. O(1).
  [[nodiscard]] const RegistrationCacheStats& stats() const noexcept { return stats_; }
  // The bound and the rounding granule given at construction. O(1).
  [[nodiscard]] std::size_t max_pinned_bytes() const noexcept { return max_; }
  [[nodiscard]] std::size_t page_size() const noexcept { return page_; }

 private:
  // First index entry overlapping [a, ...): the one containing a, else the first after a.
  typename Index::iterator first_overlap(std::uintptr_t a) noexcept {
    auto it = index_.upper_bound(a);
    if (it != index_.begin() && std::prev(it)->second->end() > a) --it;
    return it;
  }

  // Leases live entry x, already the most recently used, into `out`.
  Status hit(Iter x, Lease& out) noexcept {
    ++x->uses;
    ++stats_.hits;
    out = Lease(this, x);
    return Status::kOk;
  }

  Status miss(std::uintptr_t a, std::uintptr_t end, Lease& out) noexcept {
    const std::uintptr_t mask = page_ - 1;
    if (end > UINTPTR_MAX - mask) return Status::kInvalidArgument;
    const std::uintptr_t s = a & ~mask, e = (end + mask) & ~mask;
    // Plan without changing anything. Overlapped entries are contiguous in index_ and all start in
    // [lo, e); they are replaced whatever is registered (unleased ones free `reclaim` bytes).
    std::uintptr_t lo = s, hi = e;
    std::size_t reclaim = 0;
    for (auto it = first_overlap(s); it != index_.end() && it->first < e; ++it) {
      lo = std::min(lo, it->second->start);
      hi = std::max(hi, it->second->end());
      if (it->second->uses == 0) reclaim += it->second->len;
    }
    const auto overlaps = [s, e](const Entry& x) { return x.start < e && x.end() > s; };
    std::size_t victims = 0;  // LRU entries to evict besides the overlapped ones
    const auto fits = [&](std::size_t need) noexcept {
      victims = 0;
      if (need > max_) return false;
      std::size_t room = max_ - stats_.pinned_bytes + reclaim;
      for (auto it = lru_.begin(); room < need && it != lru_.end(); ++it) {
        if (it->uses == 0 && !overlaps(*it)) {
          room += it->len;
          ++victims;
        }
      }
      return room >= need;
    };
    // The union if it fits, else the request's own pages.
    std::uintptr_t us = lo, ue = hi;
    if (!fits(hi - lo)) {
      if (!fits(e - s)) return Status::kNoResource;
      us = s, ue = e;
    }
    const std::size_t ulen = ue - us;
    if (ulen > max_ - stats_.pinned_bytes) {
      // Room is made before registering so that the bound holds at every instant.
      for (auto it = first_overlap(s); it != index_.end() && it->first < e;) {
        const Iter x = it->second;
        it = x->uses == 0 ? index_.erase(it) : std::next(it);
        if (x->uses == 0) evict(x);
      }
      for (auto it = lru_.begin(); victims > 0;) {
        const Iter x = it++;
        if (x->uses != 0 || overlaps(*x)) continue;
        index_.erase(x->start);
        evict(x);
        --victims;
      }
    }
    // Reserve the index slot before registering: rollback is then a noexcept erase. A taken key
    // belongs to an overlapped entry, which the commit below replaces.
    typename Index::iterator slot;
    bool inserted = false;
    try {
      std::tie(slot, inserted) = index_.try_emplace(us, Iter{});
    } catch (...) {
      return Status::kNoResource;
    }
    const auto unreserve = [&]() noexcept {
      if (inserted) index_.erase(slot);
    };
    std::optional<Handle> h;
    std::uint32_t lkey = 0, rkey = 0;
    try {
      h.emplace(registrar_.register_region(reinterpret_cast<void*>(us), ulen));
      lkey = static_cast<std::uint32_t>(registrar_.lkey(*h));
      rkey = static_cast<std::uint32_t>(registrar_.rkey(*h));
    } catch (...) {
      if (h) registrar_.deregister(*h);
      unreserve();
      return Status::kDeviceError;
    }
    List fresh(lru_.get_allocator());
    try {
      fresh.push_back(Entry{us, ulen, *h, lkey, rkey, 1, false});
    } catch (...) {
      registrar_.deregister(*h);
      unreserve();
      return Status::kNoResource;
    }
    // Commit: nothing below allocates or throws.
    ++stats_.misses, ++stats_.registrations, ++stats_.entries;
    stats_.pinned_bytes += ulen;
    stats_.peak_pinned_bytes = std::max(stats_.peak_pinned_bytes, stats_.pinned_bytes);
    for (auto it = index_.lower_bound(lo); it != index_.end() && it->first < e;) {
      if (it == slot && inserted) {
        ++it;
        continue;
      }
      if (it->second->uses == 0) {
        evict(it->second);
      } else {
        retire(it->second);
      }
      it = (it == slot) ? std::next(it) : index_.erase(it);
    }
    lru_.splice(lru_.end(), fresh);
    slot->second = std::prev(lru_.end());
    out = Lease(this, slot->second);
    return Status::kOk;
  }

  // Deregisters an unleased live entry / moves a leased one to retired_; the caller fixes index_.
  void evict(Iter x) noexcept {
    ++stats_.evictions;
    deregister(x, lru_);
  }
  void retire(Iter x) noexcept {
    x->retired = true;
    retired_.splice(retired_.end(), lru_, x);
  }
  void deregister(Iter x, List& from) noexcept {
    registrar_.deregister(x->handle);
    ++stats_.deregistrations;
    --stats_.entries;
    stats_.pinned_bytes -= x->len;
    from.erase(x);
  }
  void release(Iter x) noexcept {
    assert(x->uses > 0);
    if (--x->uses == 0 && x->retired) deregister(x, retired_);
  }

  R& registrar_;
  std::size_t max_;
  std::size_t page_;
  List lru_;      // live entries (in index_), least recently acquired first
  List retired_;  // leased entries no longer handed out (stale or merged away)
  Index index_;   // live entries by start address; pairwise disjoint
  RegistrationCacheStats stats_;
};

}  // namespace unet::core
