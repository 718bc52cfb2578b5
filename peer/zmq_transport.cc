#include "peer/zmq_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <algorithm>
#include <deque>
#include <utility>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/error.h"
#include "engine/frame.h"

namespace gossip::peer {

namespace {

using engine::RawFrame;
using engine::SharedBytes;

constexpr int kControl = 0;  // channel index of control frames
constexpr int kModel = 1;    // channel index of model frames
constexpr char kChannelByte[2] = {'c', 'm'};
constexpr std::size_t kCopyBelow = 4096;  // smaller payloads are copied: cheaper than a zero-copy hook

struct Out {
  Bytes header;
  SharedBytes payload;
};

struct Channel {
  zmq::socket_t socket;
  std::deque<Out> queue;
};

struct Link {
  Channel channel[2];  // kControl, kModel
  // Reads the control DEALER's socket monitor (a PAIR on an inproc address): a DISCONNECTED event tells
  // that the TCP connection to the peer broke (RST, ZMTP heartbeat timeout), the daemon's hint to probe.
  // Declared last so it closes after the socket it monitors.
  zmq::socket_t monitor;
};

struct Command {
  enum class Type { Send, Add, Remove } type;
  PeerId peer = 0;
  Out frame;                   // Send
  std::unique_ptr<Link> link;  // Add
};

std::string reason(const zmq::error_t& e) {
  return e.num() == EADDRINUSE ? "address already in use" : e.what();
}

// The kind is header byte 5 (engine/frame.h); anything unreadable goes on the model channel.
int channelOf(const Bytes& header) {
  return header.size() > 5 && header[5] != std::byte{static_cast<std::uint8_t>(engine::FrameKind::Model)}
             ? kControl
             : kModel;
}

void releaseShared(void*, void* hint) { delete static_cast<SharedBytes*>(hint); }

zmq::message_t payloadMessage(const SharedBytes& p) {
  if (!p || p->empty()) return zmq::message_t();
  if (p->size() < kCopyBelow) return zmq::message_t(p->data(), p->size());
  // Zero copy: libzmq calls releaseShared from its own I/O thread once the bytes are on the wire.
  return zmq::message_t(const_cast<std::byte*>(p->data()), p->size(), &releaseShared, new SharedBytes(p));
}

// Received payloads must be copied into a Bytes. A fresh multi-megabyte vector costs a page fault per 4 KiB
// (measured: ~20% of loopback throughput for 64 MB frames), so large buffers come back here when the engine
// drops its last reference, and the next frame of similar size is copied into one without faulting.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr std::size_t kMinPooled = std::size_t{1} << 20;  // smaller ones: malloc is cheap enough
  explicit BufferPool(std::size_t keep) : keep_(keep) {}

  SharedBytes copy(const std::byte* p, std::size_t n) {
    std::unique_ptr<Bytes> b;
    if (n >= kMinPooled) {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        b = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!b) b = std::make_unique<Bytes>();
    b->assign(p, p + n);
    return SharedBytes(b.release(), [pool = shared_from_this()](const Bytes* x) { pool->give(const_cast<Bytes*>(x)); });
  }

 private:
  void give(Bytes* x) {
    std::unique_ptr<Bytes> b(x);
    if (b->capacity() < kMinPooled) return;
    std::lock_guard lock(mutex_);
    if (free_.size() < keep_) free_.push_back(std::move(b));
  }
  std::size_t keep_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Bytes>> free_;
};

}  // namespace

struct ZmqTransport::Impl {
  ZmqOptions opt;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  int wakeFd = -1;

  std::mutex cmdMutex;
  std::deque<Command> commands;

  std::mutex inboxMutex;
  std::condition_variable inboxCv;
  std::deque<RawFrame> inbox;
  std::uint64_t inboxBytes = 0;
  bool readPaused = false;  // the I/O thread stopped reading because the inbox is full

  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;  // written once by the I/O thread before `failed` is set
  std::atomic<std::uint64_t> framesSent{0}, bytesSent{0}, framesReceived{0}, bytesReceived{0}, malformed{0},
      sendDropped{0};

  std::map<PeerId, std::unique_ptr<Link>> links;  // I/O thread only
  std::atomic<std::uint64_t> monitorSerial{0};    // names the monitors' inproc addresses
  std::atomic<std::uint64_t> disconnectEvents{0};
  std::mutex disconnectMutex;
  std::vector<PeerId> disconnected;                // since the last takeDisconnects(), without repeats
  std::thread io;

  std::shared_ptr<BufferPool> pool;  // shared with the payloads handed out, which may outlive the transport

  explicit Impl(ZmqOptions o) : opt(o), pool(std::make_shared<BufferPool>(o.recycled_buffers)) {}
  ~Impl() {
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void setCommon(zmq::socket_t& s) {
    s.set(zmq::sockopt::linger, 0);  // closing never waits for unsent frames: the engine's delivery layer retries
    s.set(zmq::sockopt::heartbeat_ivl, opt.heartbeat_ivl_ms);  // ZMTP pings find dead TCP connections
    s.set(zmq::sockopt::heartbeat_timeout, opt.heartbeat_timeout_ms);  // no traffic this long: drop, reconnect
    s.set(zmq::sockopt::heartbeat_ttl, opt.heartbeat_timeout_ms);  // the remote side drops us as quickly
    s.set(zmq::sockopt::handshake_ivl, opt.handshake_ivl_ms);  // a connection stuck in the handshake is closed
  }

  void bind(const std::string& listen) {
    setCommon(router);
    // libzmq checks each part against this; the payload is the largest part a valid frame has.
    router.set(zmq::sockopt::maxmsgsize,
               static_cast<std::int64_t>(engine::kMaxPayloadBytes + engine::kFrameHeaderBytes));
    // Few messages buffered per connection: when the inbox is full, back-pressure reaches the sender soon.
    router.set(zmq::sockopt::rcvhwm, 16);
    // A restarted peer reconnects with its old routing id before the dead connection times out: let it in.
    router.set(zmq::sockopt::router_handover, true);
    // ROUTER_MANDATORY is not set: it only changes how a ROUTER *sends*, and this ROUTER only receives.
    try {
      router.bind(listen);
    } catch (const zmq::error_t& e) {
      throw IoError("listen address " + listen + ": " + reason(e));
    }
  }

  std::unique_ptr<Link> connect(PeerId self, const std::string& endpoint) {
    auto link = std::make_unique<Link>();
    for (int c : {kControl, kModel}) {
      zmq::socket_t s(ctx, zmq::socket_type::dealer);
      setCommon(s);
      s.set(zmq::sockopt::immediate, true);  // queue only on a live connection; else frames wait in our queue
      // Model frames are big and zero-copy: a few in libzmq's pipe keep the link busy; control frames are small.
      s.set(zmq::sockopt::sndhwm, c == kModel ? 4 : 1000);
      s.set(zmq::sockopt::reconnect_ivl, opt.reconnect_ivl_ms);  // first retry soon after a peer restarts
      s.set(zmq::sockopt::reconnect_ivl_max, opt.reconnect_ivl_max_ms);  // then back off exponentially
      char id[5] = {kChannelByte[c]};
      std::memcpy(id + 1, &self, 4);  // little-endian host (core/bytes.h)
      s.set(zmq::sockopt::routing_id, zmq::const_buffer(id, sizeof id));
      if (c == kControl) {
        // Watched before it connects, so that no event is missed; the PAIR connects to the monitor's
        // inproc address, which zmq_socket_monitor has just bound.
        const std::string addr = "inproc://gossip-monitor-" + std::to_string(monitorSerial.fetch_add(1));
        if (zmq_socket_monitor(s.handle(), addr.c_str(), ZMQ_EVENT_DISCONNECTED) != 0)
          throw IoError("zmq socket monitor: " + std::string(zmq_strerror(zmq_errno())));
        link->monitor = zmq::socket_t(ctx, zmq::socket_type::pair);
        link->monitor.set(zmq::sockopt::linger, 0);
        link->monitor.connect(addr);
      }
      link->channel[c].socket = std::move(s);
      try {
        link->channel[c].socket.connect(endpoint);
      } catch (const zmq::error_t& e) {
        throw IoError("peer " + std::to_string(self) + " endpoint " + endpoint + ": " + e.what());
      }
    }
    return link;
  }

  void wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wakeFd, &one, sizeof one);  // EAGAIN only if already signalled
  }

  void push(Command c) {
    if (failed.load()) throw IoError("zmq transport stopped: " + failure);
    {
      std::lock_guard lock(cmdMutex);
      commands.push_back(std::move(c));
    }
    wake();
  }

  bool inboxFull() const { return inbox.size() >= opt.inbox_max_frames || inboxBytes >= opt.inbox_max_bytes; }

  // Sends queued frames until the socket would block. Returns whether the queue is empty.
  void flush(Channel& ch) {
    while (!ch.queue.empty()) {
      Out& o = ch.queue.front();
      zmq::message_t head(o.header.data(), o.header.size());
      if (!ch.socket.send(head, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
      // The rest of a multipart message never blocks once its first part has been accepted.
      zmq::message_t body = payloadMessage(o.payload);
      ch.socket.send(body, zmq::send_flags::none);
      framesSent.fetch_add(1, std::memory_order_relaxed);
      bytesSent.fetch_add(o.header.size() + (o.payload ? o.payload->size() : 0), std::memory_order_relaxed);
      ch.queue.pop_front();
    }
  }

  // Reads one message from the ROUTER; false when none is waiting.
  bool readOne() {
    zmq::message_t part[3];
    if (!router.recv(part[0], zmq::recv_flags::dontwait)) return false;
    std::size_t n = 1;
    bool more = part[0].more();
    while (more) {  // every part of a multipart message is available once its first part is
      zmq::message_t m;
      (void)router.recv(m, zmq::recv_flags::none);
      more = m.more();
      if (n < 3) part[n] = std::move(m);
      ++n;
    }
    if (n != 3) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    const auto* h = part[1].data<std::byte>();
    const auto* p = part[2].data<std::byte>();
    RawFrame f{Bytes(h, h + part[1].size()), pool->copy(p, part[2].size())};
    framesReceived.fetch_add(1, std::memory_order_relaxed);
    bytesReceived.fetch_add(part[1].size() + part[2].size(), std::memory_order_relaxed);
    {
      std::lock_guard lock(inboxMutex);
      inboxBytes += f.payload->size();
      inbox.push_back(std::move(f));
    }
    inboxCv.notify_all();
    return true;
  }

  void apply(Command& c) {
    switch (c.type) {
      case Command::Type::Add:
        removeLink(c.peer);
        links[c.peer] = std::move(c.link);
        break;
      case Command::Type::Remove:
        removeLink(c.peer);
        break;
      case Command::Type::Send: {
        auto it = links.find(c.peer);
        if (it == links.end()) {
          sendDropped.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        Channel& ch = it->second->channel[channelOf(c.frame.header)];
        if (ch.queue.size() >= opt.max_queued_per_channel) {
          ch.queue.pop_front();
          sendDropped.fetch_add(1, std::memory_order_relaxed);
        }
        ch.queue.push_back(std::move(c.frame));
        flush(ch);
        break;
      }
    }
  }

  // Reads every event waiting on a link's monitor; a DISCONNECTED notes the peer.
  void readMonitor(PeerId peer, Link& link) {
    for (;;) {
      zmq::message_t event, address;
      if (!link.monitor.recv(event, zmq::recv_flags::dontwait)) return;
      if (event.more()) (void)link.monitor.recv(address, zmq::recv_flags::none);
      std::uint16_t id = 0;
      if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
      if (id != ZMQ_EVENT_DISCONNECTED) continue;
      disconnectEvents.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(disconnectMutex);
      if (std::find(disconnected.begin(), disconnected.end(), peer) == disconnected.end()) disconnected.push_back(peer);
    }
  }

  void removeLink(PeerId peer) {
    auto it = links.find(peer);
    if (it == links.end()) return;
    for (const Channel& ch : it->second->channel) sendDropped.fetch_add(ch.queue.size(), std::memory_order_relaxed);
    links.erase(it);  // linger 0: the sockets close at once
  }

  void loop() {
    std::vector<zmq_pollitem_t> items;
    std::vector<Channel*> writers;
    std::vector<std::pair<PeerId, Link*>> monitors;
    std::deque<Command> batch;
    while (!stop.load()) {
      bool reading;
      {
        std::lock_guard lock(inboxMutex);
        readPaused = inboxFull();
        reading = !readPaused;
      }
      items.clear();
      writers.clear();
      monitors.clear();
      items.push_back({nullptr, wakeFd, ZMQ_POLLIN, 0});
      items.push_back({router.handle(), 0, static_cast<short>(reading ? ZMQ_POLLIN : 0), 0});
      for (auto& [id, link] : links) {
        items.push_back({link->monitor.handle(), 0, ZMQ_POLLIN, 0});
        monitors.emplace_back(id, link.get());
      }
      const std::size_t firstWriter = items.size();
      for (auto& [id, link] : links)
        for (Channel& ch : link->channel)
          if (!ch.queue.empty()) {
            items.push_back({ch.socket.handle(), 0, ZMQ_POLLOUT, 0});
            writers.push_back(&ch);
          }
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds{-1});
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (items[1].revents & ZMQ_POLLIN)
        for (int i = 0; i < 64 && readOne(); ++i) {  // a batch, then let the senders have a turn
          std::lock_guard lock(inboxMutex);
          if (inboxFull()) break;
        }
      for (std::size_t i = 0; i < monitors.size(); ++i)
        if (items[i + 2].revents & ZMQ_POLLIN) readMonitor(monitors[i].first, *monitors[i].second);
      for (std::size_t i = 0; i < writers.size(); ++i)
        if (items[firstWriter + i].revents & ZMQ_POLLOUT) flush(*writers[i]);
      if (items[0].revents & ZMQ_POLLIN) {
        std::uint64_t count;
        [[maybe_unused]] auto n = ::read(wakeFd, &count, sizeof count);
        {
          std::lock_guard lock(cmdMutex);
          batch.swap(commands);
        }
        for (Command& c : batch) apply(c);
        batch.clear();
      }
    }
  }

  void run() {
    try {
      loop();
    } catch (const std::exception& e) {
      failure = e.what();
      failed.store(true);
      inboxCv.notify_all();
    }
  }
};

ZmqTransport::ZmqTransport(PeerId self, const std::string& listen, ZmqOptions options)
    : self_(self), impl_(std::make_unique<Impl>(options)) {
  impl_->bind(listen);
  endpoint_ = impl_->router.get(zmq::sockopt::last_endpoint);
  impl_->wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->wakeFd < 0) throw IoError("eventfd: " + std::string(std::strerror(errno)));
  impl_->io = std::thread([impl = impl_.get()] { impl->run(); });
}

ZmqTransport::~ZmqTransport() {
  impl_->stop.store(true);
  impl_->wake();
  impl_->io.join();
}

void ZmqTransport::addPeer(PeerId peer, const std::string& endpoint) {
  Command c{Command::Type::Add, peer, {}, impl_->connect(self_, endpoint)};
  impl_->push(std::move(c));
}

std::vector<PeerId> ZmqTransport::takeDisconnects() {
  std::lock_guard lock(impl_->disconnectMutex);
  return std::exchange(impl_->disconnected, {});
}

void ZmqTransport::removePeer(PeerId peer) { impl_->push(Command{Command::Type::Remove, peer, {}, nullptr}); }

void ZmqTransport::send(PeerId to, Bytes header, engine::SharedBytes payload) {
  impl_->push(Command{Command::Type::Send, to, Out{std::move(header), std::move(payload)}, nullptr});
}

bool ZmqTransport::receive(engine::RawFrame& out) {
  bool wake = false;
  {
    std::lock_guard lock(impl_->inboxMutex);
    if (impl_->inbox.empty()) return false;
    out = std::move(impl_->inbox.front());
    impl_->inbox.pop_front();
    impl_->inboxBytes -= out.payload->size();
    if (impl_->readPaused && !impl_->inboxFull()) {
      impl_->readPaused = false;
      wake = true;
    }
  }
  if (wake) impl_->wake();
  return true;
}

bool ZmqTransport::waitReadable(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->inboxMutex);
  return impl_->inboxCv.wait_for(lock, timeout, [&] { return !impl_->inbox.empty() || impl_->failed.load(); }) &&
         !impl_->inbox.empty();
}

ZmqStats ZmqTransport::stats() const {
  const Impl& i = *impl_;
  return {i.framesSent.load(), i.bytesSent.load(), i.framesReceived.load(), i.bytesReceived.load(),
          i.malformed.load(), i.sendDropped.load(), i.disconnectEvents.load()};
}

}  // namespace gossip::peer
