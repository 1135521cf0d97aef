// ChannelTable: from an arrival's tag to its channel — U-Net's demultiplexing, and its protection:
// a tag that is in no open channel's entry finds nothing, and the arrival is dropped.
//
// RC tags are local QP numbers (each channel has its own QP). UD tags are the sender's QPN and GID
// (one QP serves every channel). Storage is reserved for `max_channels` at construction, so neither
// a lookup nor an insert up to that many allocates. Pure logic, no device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>

#include "unet/core/descriptor.h"
#include "unet/status.h"
#include "unet/verbs/gid.h"

namespace unet::core {

// A UD arrival's tag: the sender's QP number and GID.
struct UdTag {
  std::uint32_t qpn = 0;
  verbs::Gid gid;
  // As two words and the QPN: std::array's == calls memcmp, on every arrival.
  bool operator==(const UdTag& o) const noexcept {
    std::uint64_t a[2], b[2];
    std::memcpy(a, gid.raw.data(), sizeof a);
    std::memcpy(b, o.gid.raw.data(), sizeof b);
    return qpn == o.qpn && a[0] == b[0] && a[1] == b[1];
  }
};

// Tags of the open channels, RC and UD, each naming its ChannelId. One thread.
class ChannelTable {
 public:
  // Room for `max_channels` tags in all, reserved now.
  explicit ChannelTable(std::uint32_t max_channels) : max_(max_channels) {
    rc_.reserve(max_channels);
    ud_.reserve(max_channels);
  }

  // Adds a tag. kInvalidArgument if the tag already names a channel; kNoResource past max_channels.
  Status add(std::uint32_t rc_qpn, ChannelId ch) { return add_to(rc_, rc_qpn, ch); }
  Status add(const UdTag& tag, ChannelId ch) {
    last_valid_ = false;
    return add_to(ud_, tag, ch);
  }
  // Removes a tag; kNotFound if absent.
  Status remove(std::uint32_t rc_qpn) noexcept {
    return rc_.erase(rc_qpn) ? Status::kOk : Status::kNotFound;
  }
  Status remove(const UdTag& tag) noexcept {
    last_valid_ = false;
    return ud_.erase(tag) ? Status::kOk : Status::kNotFound;
  }
  // The channel a tag names, or kNoChannel. No allocation.
  ChannelId find(std::uint32_t rc_qpn) const noexcept { return find_in(rc_, rc_qpn); }
  // UD remembers the last tag looked up: a run of arrivals from one sender hashes once.
  ChannelId find(const UdTag& tag) const noexcept {
    if (last_valid_ && tag == last_) return last_channel_;
    last_ = tag;
    last_channel_ = find_in(ud_, tag);
    last_valid_ = true;
    return last_channel_;
  }
  // Tags held, RC and UD together.
  std::size_t size() const noexcept { return rc_.size() + ud_.size(); }

 private:
  struct UdHash {
    // The GID as two words, folded with the QPN by multiply-xorshift steps: a few instructions
    // per arrival, where a byte-at-a-time hash costs far more (core/README.md, "Performance").
    std::size_t operator()(const UdTag& t) const noexcept {
      std::uint64_t w[2];
      std::memcpy(w, t.gid.raw.data(), sizeof w);
      std::uint64_t h = (w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull) ^ t.qpn) * 0xbf58476d1ce4e5b9ull;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  template <class Map, class Key>
  Status add_to(Map& m, const Key& k, ChannelId ch) {
    if (m.count(k)) return Status::kInvalidArgument;
    if (size() >= max_) return Status::kNoResource;
    m.emplace(k, ch);
    return Status::kOk;
  }
  template <class Map, class Key>
  static ChannelId find_in(const Map& m, const Key& k) noexcept {
    auto it = m.find(k);
    return it == m.end() ? kNoChannel : it->second;
  }

  std::uint32_t max_;
  std::unordered_map<std::uint32_t, ChannelId> rc_;
  std::unordered_map<UdTag, ChannelId, UdHash> ud_;
  mutable UdTag last_;
  mutable ChannelId last_channel_ = kNoChannel;
  mutable bool last_valid_ = false;
};

}  // namespace unet::core
