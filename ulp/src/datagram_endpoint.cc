// DatagramEndpoint: ports, fragmentation on send, demultiplexing and reassembly on arrival.
#include "unet/ulp/datagram_endpoint.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

#include "unet/core/wait_until.h"
#include "unet/verbs/deadline.h"

namespace unet::ulp {

// A datagram waiting in a port's queue: small ones copied here, one-fragment ones still in their
// segment buffer (behind the header), reassembled ones in a reassembler slot.
struct DatagramEndpoint::Entry {
  enum class Where : std::uint8_t { kHere, kBuffer, kSlot };
  static constexpr std::size_t kHereBytes = core::Descriptor::kInlineBytes - kDatagramHeaderBytes;
  ChannelId peer = core::kNoChannel;
  std::uint16_t src_port = 0;
  Where where = Where::kHere;
  std::uint32_t length = 0;
  std::uint32_t ref = 0;  // buffer id or slot
  std::array<std::byte, kHereBytes> here{};
};

struct DatagramEndpoint::Port {
  Port(std::uint16_t p, std::uint32_t depth) : port(p), queue(depth) {}
  std::uint16_t port;
  core::DescriptorRing<Entry> queue;
  std::unique_ptr<SocketFd> fd;  // made by port_fd(); null until asked for
};

DatagramEndpoint::DatagramEndpoint(const core::EndpointConfig& net, const DatagramConfig& config)
    : config_(config), reassembly_(config.reassembly) {
  if (net.transport != core::Transport::kUd)
    throw std::invalid_argument("DatagramEndpoint: needs a UD endpoint");
  if (config.port_queue == 0 || config.max_ports == 0)
    throw std::invalid_argument("DatagramEndpoint: port_queue and max_ports must be positive");
  net_ = std::make_unique<core::Endpoint>(net);
  stride_ = net_->max_message() - static_cast<std::uint32_t>(kDatagramHeaderBytes);
  if (stride_ < kMinStride || stride_ > UINT16_MAX)
    throw std::invalid_argument("DatagramEndpoint: unusable path MTU");
  if (!fits_send_path(stride_))
    throw std::invalid_argument("DatagramEndpoint: a 64 KiB datagram is " +
                                std::to_string(fragment_count(kMaxDatagram, stride_)) +
                                " fragments; send_queue_depth and the spare buffers (buffers - "
                                "free_queue_depth) must both hold that many");
  ports_.reserve(config.max_ports);
  net_->set_upcall([this](const core::Descriptor& d) { arrival(d); });
}

DatagramEndpoint::~DatagramEndpoint() = default;

// The largest datagram must fit the send path whole, or send_to could never take it.
bool DatagramEndpoint::fits_send_path(std::uint32_t stride) const noexcept {
  const core::EndpointConfig& c = net_->config();
  const std::uint32_t most = fragment_count(kMaxDatagram, stride);
  return c.send_queue_depth >= most && c.buffers - c.free_queue_depth >= most;
}

std::uint32_t DatagramEndpoint::stride(ChannelId peer) const noexcept {
  const std::uint32_t m = net_->max_message(peer);
  return m > kDatagramHeaderBytes ? m - static_cast<std::uint32_t>(kDatagramHeaderBytes) : 0;
}

ChannelId DatagramEndpoint::accept_peer(const core::ChannelOffer& offer,
                                        std::string_view peer_half) {
  const ChannelId peer = net_->accept_offer(offer, peer_half);
  const std::uint32_t st = stride(peer);
  if (st < kMinStride || !fits_send_path(st)) {
    (void)net_->close_channel(peer);
    throw std::length_error("DatagramEndpoint: the peer's MTU or buffer size leaves fragments of " +
                            std::to_string(st) + " bytes, " +
                            (st < kMinStride
                                 ? "below the minimum of " + std::to_string(kMinStride)
                                 : "too many for the send path to hold a 64 KiB datagram"));
  }
  return peer;
}

DatagramEndpoint::Port* DatagramEndpoint::find(std::uint16_t port) noexcept {
  for (auto& p : ports_)
    if (p->port == port) return p.get();
  return nullptr;
}

Status DatagramEndpoint::bind(std::uint16_t port) noexcept {
  if (find(port)) return Status::kInvalidState;
  if (ports_.size() >= config_.max_ports) return Status::kNoResource;
  try {
    ports_.push_back(std::make_unique<Port>(port, config_.port_queue));  // set-up: may allocate
  } catch (const std::bad_alloc&) {
    return Status::kNoResource;
  }
  return Status::kOk;
}

Status DatagramEndpoint::unbind(std::uint16_t port) noexcept {
  auto it =
      std::find_if(ports_.begin(), ports_.end(), [&](const auto& p) { return p->port == port; });
  if (it == ports_.end()) return Status::kNotFound;
  Entry e;
  while ((*it)->queue.pop_into(e)) drop(e);
  ports_.erase(it);  // closes the port's fd, if it has one
  return Status::kOk;
}

Status DatagramEndpoint::port_fd(std::uint16_t port, int& out) noexcept {
  Port* p = find(port);
  if (!p) return Status::kNotFound;
  if (!p->fd) {
    if (Status s = SocketFd::create(net_->notify_fd(), p->fd); s != Status::kOk) return s;
    refresh(*p);
  }
  out = p->fd->fd();
  return Status::kOk;
}

// Keeps a port's fd signalled exactly while a datagram waits (no syscall unless that changed).
void DatagramEndpoint::refresh(Port& port) noexcept {
  if (port.fd) port.fd->set(!port.queue.empty());
}

Status DatagramEndpoint::send_to(std::uint16_t src_port, ChannelId peer, std::uint16_t dst_port,
                                 std::span<const std::byte> data) noexcept {
  if (!find(src_port)) return Status::kNotFound;
  if (data.size() > kMaxDatagram) return Status::kInvalidArgument;
  if (Status s = net_->channel_status(peer); s != Status::kOk) return s;
  const std::uint32_t st = stride(peer);  // accept_peer checked it
  DatagramHeader h;
  h.src_port = src_port;
  h.dst_port = dst_port;
  h.stride = static_cast<std::uint16_t>(st);
  h.length = static_cast<std::uint32_t>(data.size());
  h.count = static_cast<std::uint16_t>(fragment_count(h.length, st));
  // Whole or not at all: room for every fragment first.
  const std::size_t last = kDatagramHeaderBytes + (h.length - (h.count - 1u) * st);
  const std::uint32_t buffers = (h.count - 1u) + (last > net_->inline_threshold() ? 1u : 0u);
  if (net_->send_queue_space() < h.count || net_->spare_buffers() < buffers)
    return Status::kNoResource;
  h.id = next_id_++;
  for (std::uint16_t i = 0; i < h.count; ++i) {
    h.index = i;
    const std::span<const std::byte> frag = data.subspan(h.offset(), h.fragment_bytes());
    const std::size_t size = kDatagramHeaderBytes + frag.size();
    Status s;
    if (size <= net_->inline_threshold()) {
      std::array<std::byte, core::Descriptor::kInlineBytes> msg;
      (void)encode(h, frag.size(), msg);
      if (!frag.empty()) std::memcpy(msg.data() + kDatagramHeaderBytes, frag.data(), frag.size());
      s = net_->send_inline(peer, std::span<const std::byte>(msg.data(), size));
    } else {
      core::BufferId b;
      if ((s = net_->acquire_buffer(b)) != Status::kOk)
        return s;  // room was checked: cannot happen
      std::byte* p = net_->buffer(b).data();
      (void)encode(h, frag.size(), std::span<std::byte>(p, kDatagramHeaderBytes));
      std::memcpy(p + kDatagramHeaderBytes, frag.data(), frag.size());
      s = net_->send(peer, b, static_cast<std::uint32_t>(size));
    }
    if (s != Status::kOk) return s;  // the channel closed under us; the receiver expires the rest
    ++stats_.fragments_sent;
  }
  ++stats_.sent;
  // A socket's send goes out now, not at the next poll(): one doorbell for all the fragments.
  return net_->flush() < 0 ? Status::kDeviceError : Status::kOk;
}

void DatagramEndpoint::arrival(const core::Descriptor& d) noexcept {
  const bool small = d.is_inline();
  const std::span<const std::byte> bytes =
      small ? d.inline_payload()
            : std::span<const std::byte>(net_->buffer(d.buffer).first(d.length));
  ++stats_.fragments_received;
  DatagramHeader h;
  Port* port = nullptr;
  if (decode(bytes, h) != Status::kOk) {
    ++stats_.malformed;
  } else if (!(port = find(h.dst_port))) {
    ++stats_.unbound_drops;  // every fragment: its datagram's others may never come
  }
  const std::span<const std::byte> frag =
      port ? bytes.subspan(kDatagramHeaderBytes) : std::span<const std::byte>{};
  Entry e;
  e.peer = d.channel;
  e.src_port = h.src_port;
  e.length = h.length;
  bool keep_buffer = false;
  if (port && h.count == 1) {
    if (small) {
      std::memcpy(e.here.data(), frag.data(), frag.size());
    } else {
      e.where = Entry::Where::kBuffer;
      e.ref = d.buffer;
      keep_buffer = true;
    }
    deliver(*port, e);
  } else if (port) {
    std::uint32_t slot;
    if (reassembly_.add(d.channel, h, frag, clock_.time(), slot) ==
        Reassembler::Outcome::kComplete) {
      e.where = Entry::Where::kSlot;
      e.ref = slot;
      deliver(*port, e);
    }
  }
  if (!small && !keep_buffer) (void)net_->release(d.buffer);
}

// Queues a whole datagram on its port, or drops it (counted) when the queue is full.
void DatagramEndpoint::deliver(Port& port, const Entry& e) noexcept {
  Entry* slot = port.queue.reserve();
  if (!slot) {
    ++stats_.queue_full_drops;
    return drop(e);
  }
  *slot = e;
  port.queue.commit();
  ++stats_.delivered;
  refresh(port);
}

// Gives back what a datagram holds.
void DatagramEndpoint::drop(const Entry& e) noexcept {
  if (e.where == Entry::Where::kBuffer) (void)net_->release(e.ref);
  if (e.where == Entry::Where::kSlot) reassembly_.release(e.ref);
}

Status DatagramEndpoint::recv_from(std::uint16_t port, std::span<std::byte> out,
                                   DatagramInfo& info) noexcept {
  Port* p = find(port);
  if (!p) return Status::kNotFound;
  if (p->queue.empty()) return Status::kNoResource;
  const Entry& e = p->queue.at(0);
  info = DatagramInfo{e.peer, e.src_port, e.length};
  if (out.size() < e.length) return Status::kInvalidArgument;
  const std::byte* src = e.where == Entry::Where::kHere ? e.here.data()
                         : e.where == Entry::Where::kBuffer
                             ? net_->buffer(e.ref).data() + kDatagramHeaderBytes
                             : reassembly_.data(e.ref).data();
  core::copy_bytes(out.data(), src, e.length);
  drop(e);
  p->queue.pop();
  ++stats_.received;
  refresh(*p);
  return Status::kOk;
}

int DatagramEndpoint::next_timer_ms() const noexcept {
  if (reassembly_.assembling() == 0) return -1;
  // The oldest incomplete datagram expires within one timeout from now: check that often.
  return verbs::clamp_ms(std::chrono::ceil<std::chrono::milliseconds>(config_.reassembly.timeout));
}

int DatagramEndpoint::poll() noexcept {
  const Time t = clock_.begin();  // one read, by the arrivals' reassembly and the expiry below
  const int n = net_->poll();
  clock_.end();
  if (n < 0) return n;
  core::service_when_due(*net_, t, next_service_);
  return n + static_cast<int>(reassembly_.expire(t));
}

Status DatagramEndpoint::wait(std::uint16_t port, std::chrono::milliseconds timeout) noexcept {
  Port* p = find(port);
  if (!p) return Status::kNotFound;
  return core::wait_until(
      *net_, timeout, [this] { return poll(); }, [p] { return !p->queue.empty(); });
}

}  // namespace unet::ulp
