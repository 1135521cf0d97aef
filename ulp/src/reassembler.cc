#include "unet/ulp/reassembler.h"

#include <cstring>
#include <stdexcept>

namespace unet::ulp {

Reassembler::Reassembler(const ReassemblyConfig& config) : config_(config) {
  if (config.slots == 0) throw std::invalid_argument("Reassembler: at least one slot");
  if (config.timeout <= Time::zero())
    throw std::invalid_argument("Reassembler: timeout must be positive");
  slots_.resize(config.slots);
  memory_ = std::make_unique<std::byte[]>(std::size_t{config.slots} * kMaxDatagram);
}

Reassembler::Outcome Reassembler::add(std::uint32_t peer, const DatagramHeader& h,
                                      std::span<const std::byte> fragment, Time now,
                                      std::uint32_t& slot) noexcept {
  std::uint32_t at = UINT32_MAX;
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.state == State::kAssembling && s.peer == peer && s.src_port == h.src_port &&
        s.id == h.id) {
      at = i;
      break;
    }
  }
  if (at == UINT32_MAX) {
    at = take_slot();
    if (at == UINT32_MAX) {
      ++stats_.no_slot;
      return Outcome::kDropped;
    }
    Slot& s = slots_[at];
    s = Slot{};
    s.state = State::kAssembling;
    s.peer = peer;
    s.src_port = h.src_port;
    s.id = h.id;
    s.length = h.length;
    s.stride = h.stride;
    s.count = h.count;
    s.started = now;
    ++stats_.started;
  }
  Slot& s = slots_[at];
  if (s.length != h.length || s.stride != h.stride || s.count != h.count ||
      fragment.size() != h.fragment_bytes()) {
    ++stats_.inconsistent;
    return Outcome::kDropped;
  }
  if (s.seen.test(h.index)) {
    ++stats_.duplicates;
    return Outcome::kDropped;
  }
  s.seen.set(h.index);
  std::memcpy(memory_.get() + std::size_t{at} * kMaxDatagram + h.offset(), fragment.data(),
              fragment.size());
  if (++s.received < s.count) {
    ++stats_.held;
    return Outcome::kIncomplete;
  }
  s.state = State::kComplete;
  ++stats_.completed;
  slot = at;
  return Outcome::kComplete;
}

std::uint32_t Reassembler::take_slot() noexcept {
  std::uint32_t oldest = UINT32_MAX;
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state == State::kFree) return i;
    if (slots_[i].state == State::kAssembling &&
        (oldest == UINT32_MAX || slots_[i].started < slots_[oldest].started))
      oldest = i;
  }
  if (oldest != UINT32_MAX) {
    slots_[oldest].state = State::kFree;
    ++stats_.evicted;
  }
  return oldest;
}

std::span<const std::byte> Reassembler::data(std::uint32_t slot) const noexcept {
  if (slot >= slots_.size() || slots_[slot].state != State::kComplete) return {};
  return {memory_.get() + std::size_t{slot} * kMaxDatagram, slots_[slot].length};
}

void Reassembler::release(std::uint32_t slot) noexcept {
  if (slot < slots_.size() && slots_[slot].state == State::kComplete)
    slots_[slot].state = State::kFree;
}

std::uint32_t Reassembler::expire(Time now) noexcept {
  std::uint32_t n = 0;
  for (Slot& s : slots_) {
    if (s.state == State::kAssembling && now - s.started >= config_.timeout) {
      s.state = State::kFree;
      ++n;
    }
  }
  stats_.expired += n;
  return n;
}

std::uint32_t Reassembler::assembling() const noexcept {
  std::uint32_t n = 0;
  for (const Slot& s : slots_) n += s.state == State::kAssembling;
  return n;
}

}  // namespace unet::ulp
