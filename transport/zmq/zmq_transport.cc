#include "transport/zmq/zmq_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <algorithm>
#include <deque>
#include <iterator>
#include <utility>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/buffer_pool.h"
#include "transport/zmq/curve_auth.h"
#include "transport/zmq/multipart.h"
#include "transport/zmq/shaper.h"

namespace gossip::peer {

namespace {

using engine::RawFrame;
using engine::SharedBytes;
using detail::BufferPool;
using detail::CurveAuth;
using detail::Shaper;

constexpr int kControl = 0;  // channel index of control frames
constexpr int kModel = 1;    // channel index of model frames

struct Out {
  Bytes header;
  SharedBytes payload;
};

struct Channel {
  zmq::socket_t socket;
  std::deque<Out> queue;
  Shaper shaper;  // ZmqOptions::link_bytes_per_second, model channel only
};

struct Link {
  Channel channel[2];  // kControl, kModel
  // Reads the control DEALER's socket monitor (a PAIR on an inproc address): a DISCONNECTED event tells
  // that the TCP connection to the peer broke (RST, FIN, TCP keepalive timeout), the daemon's hint to probe.
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

// Anything whose kind cannot be read goes on the model channel.
int channelOf(const Bytes& header) {
  const auto kind = engine::peekKindByte(header);
  return kind && *kind != static_cast<std::uint8_t>(engine::FrameKind::Model) ? kControl : kModel;
}

}  // namespace

struct ZmqTransport::Impl {
  // A frame in the inbox. A payload of a pooled size stays in libzmq's parts and is copied by receive(), on
  // the consumer's thread: copying a 200 MB model frame here held the I/O thread for a second on a loaded
  // machine, and every probe, ack and refutation in or out of this node waited behind it (issue 27).
  struct Incoming {
    RawFrame frame;                      // payload already set when small
    std::vector<zmq::message_t> parts;   // payload parts not copied yet
    std::size_t bytes = 0;               // payload bytes
  };

  ZmqOptions opt;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  int wakeFd = -1;

  std::mutex cmdMutex;
  std::deque<Command> commands;

  std::mutex inboxMutex;
  std::condition_variable inboxCv;
  std::deque<Incoming> inbox;
  std::uint64_t inboxBytes = 0;
  // Membership frames only (see "Two inboxes" in zmq_transport.h): a mutex and a condition of their own, so
  // the membership thread never waits for the node thread's inbox or is woken by its frames.
  std::mutex memberMutex;
  std::condition_variable memberCv;
  std::deque<RawFrame> memberInbox;

  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;  // written once by the I/O thread before `failed` is set
  std::atomic<std::uint64_t> framesSent{0}, bytesSent{0}, framesReceived{0}, bytesReceived{0}, malformed{0},
      sendDropped{0}, wrongKeyForSender{0}, inboxDropped{0}, memberInboxDropped{0};
  // CurveZMQ only (ZmqOptions::curve): the ZAP handler, the keys and the self-test. Declared after ctx, so
  // its socket closes before the context.
  std::unique_ptr<CurveAuth> curve;

  std::map<PeerId, std::unique_ptr<Link>> links;  // I/O thread only
  std::atomic<std::uint64_t> monitorSerial{0};    // names the monitors' inproc addresses
  std::atomic<std::uint64_t> disconnectEvents{0};
  std::mutex disconnectMutex;
  std::vector<PeerId> disconnected;                // since the last takeDisconnects(), without repeats
  std::thread io;

  std::vector<zmq::message_t> received;  // readOne's parts, kept to reuse the vector's storage
  std::shared_ptr<BufferPool> pool;  // shared with the payloads handed out, which may outlive the transport

  explicit Impl(ZmqOptions o)
      : opt(o), curve(o.curve ? std::make_unique<CurveAuth>(ctx, o.curve) : nullptr),
        pool(std::make_shared<BufferPool>(o.recycled_buffers)) {}
  ~Impl() {
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void setCommon(zmq::socket_t& s) {
    s.set(zmq::sockopt::linger, 0);  // closing never waits for unsent frames: the engine's delivery layer retries
    // No ZMTP heartbeats: libzmq 4.3.4 aborts the process when its heartbeat timer fires on a connection
    // whose input it has stopped (stream_engine_base.cpp: timer_event calls out_event, which asserts
    // !_io_error). Input stops when a message cannot be handed to the socket: a full pipe (hence rcvhwm 0
    // below), or a pipe being torn down, which ROUTER_HANDOVER did to the old connection of a routing id
    // that connected again (no fixed routing ids now, see connect()). Seen here as "Assertion failed: !_io_error (src/stream_engine_base.cpp:331)" in 1 of 8
    // runs of tests/netns/netns_cut.sh, at shutdown after a cut and a merge; libzmq issue #4841 is the
    // same race. With CurveZMQ the heartbeats also dropped connections at every timeout although traffic
    // flowed (docs/security.md). TCP keepalives find dead connections instead (after about 10 s of
    // silence); the failure detector (SWIM probes) depends on neither.
    s.set(zmq::sockopt::tcp_keepalive, 1);
    s.set(zmq::sockopt::tcp_keepalive_idle, opt.keepalive_idle_s);
    s.set(zmq::sockopt::tcp_keepalive_intvl, 1);
    s.set(zmq::sockopt::tcp_keepalive_cnt, 5);
    s.set(zmq::sockopt::handshake_ivl, opt.handshake_ivl_ms);  // a connection stuck in the handshake is closed
  }

  void bind(const std::string& listen) {
    setCommon(router);
    if (curve) curve->serve(router);
    // libzmq checks each part against this; the payload is the largest part a valid frame has.
    router.set(zmq::sockopt::maxmsgsize,
               static_cast<std::int64_t>(engine::kMaxPayloadBytes + engine::kFrameHeaderBytes));
    // No limit on libzmq's per-connection receive pipes: the I/O thread reads every message at once and
    // drops it when the inbox is full (inbox_dropped). A limit would make libzmq stop reading a connection
    // whose pipe is full, and libzmq 4.3.4 mishandles that state: with ZMTP heartbeats on (they are off
    // now, see setCommon) it dropped the connection at the heartbeat timeout and aborted the whole process
    // ("Assertion failed: !_io_error (src/stream_engine_base.cpp:331)", seen here twice in 20 runs of
    // tests/integration/hostile_peer.sh after a SIGSTOP; libzmq PR #4830 traces the same sequence).
    // Memory stays bounded by the inbox, since nothing waits in the pipes longer than one read.
    router.set(zmq::sockopt::rcvhwm, 0);
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
      if (curve) curve->setClient(s, opt.curve->node);
      // No routing id of our own: the peer's ROUTER gives each connection a fresh one. Fixed ids (channel
      // byte + node id) were shared by two links to one endpoint (a seed link and, once the seed's id is
      // known, the member link), and the ROUTER handed the id to whichever connected last: the two
      // connections evicted each other at every reconnect, model frames on the evicted one were lost (a
      // Prox-LEAD cluster stuck at round 1 in 1 of 10 netns_cut runs, 438 retransmits unanswered), and
      // the torn-down connection is the state in which libzmq 4.3.4 aborts. Senders are named in each
      // frame's header (and bound to their key with CurveZMQ), never by the routing id.
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
      if (c == kModel && opt.link_bytes_per_second > 0) link->channel[c].shaper = Shaper(opt.link_bytes_per_second, opt.link_burst_bytes);
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

  // A failure of the I/O thread is kept and thrown by every later call (as gloo's pairs do), not only by
  // sends: a node that only waits and receives would otherwise spin on an empty inbox forever.
  void throwIfFailed() const {
    if (failed.load()) throw IoError("zmq transport stopped: " + failure);
  }

  void push(Command c) {
    throwIfFailed();
    {
      std::lock_guard lock(cmdMutex);
      commands.push_back(std::move(c));
    }
    wake();
  }

  bool inboxFull() const { return inbox.size() >= opt.inbox_max_frames || inboxBytes >= opt.inbox_max_bytes; }

  // Sends queued frames until the socket would block or the channel's shaper runs out of tokens (the loop
  // polls again when the bucket has refilled).
  void flush(Channel& ch) {
    while (!ch.queue.empty()) {
      if (ch.shaper.capped() && ch.shaper.refill() > 0) return;
      Out& o = ch.queue.front();
      if (!detail::sendFrame(ch.socket, o.header, o.payload)) return;
      const std::size_t bytes = o.header.size() + (o.payload ? o.payload->size() : 0);
      framesSent.fetch_add(1, std::memory_order_relaxed);
      bytesSent.fetch_add(bytes, std::memory_order_relaxed);
      ch.shaper.spend(bytes);
      ch.queue.pop_front();
    }
  }

  // Reads one message from the ROUTER; false when none is waiting.
  bool readOne() {
    std::vector<zmq::message_t>& part = received;
    if (!detail::readMessage(router, part)) return false;
    struct Release {  // frees the parts on every way out, not at the next read
      std::vector<zmq::message_t>& parts;
      ~Release() { parts.clear(); }
    } release{part};
    if (!detail::wellFormed(part)) {
      malformed.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (curve && !curve->senderMatchesKey(part[1])) {
      wrongKeyForSender.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    const auto kind = engine::peekKindByte({part[1].data<std::byte>(), part[1].size()});
    if (kind == static_cast<std::uint8_t>(engine::FrameKind::Membership)) return toMemberInbox(part);
    {
      // Control frames (acks, edge agreement) have room beyond the limit, so a flood of model frames
      // cannot starve them.
      std::lock_guard lock(inboxMutex);
      const bool control = kind && *kind != static_cast<std::uint8_t>(engine::FrameKind::Model);
      if (control ? inbox.size() >= 2 * opt.inbox_max_frames : inboxFull()) {
        inboxDropped.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    std::size_t size = 0;
    for (std::size_t k = 2; k < part.size(); ++k) size += part[k].size();
    const auto* h = part[1].data<std::byte>();
    Incoming in;
    in.frame.header = Bytes(h, h + part[1].size());
    in.bytes = size;
    if (size >= BufferPool::kMinPooled)
      std::move(part.begin() + 2, part.end(), std::back_inserter(in.parts));
    else
      in.frame.payload = pool->copy(part.data() + 2, part.size() - 2, size);
    framesReceived.fetch_add(1, std::memory_order_relaxed);
    bytesReceived.fetch_add(part[1].size() + size, std::memory_order_relaxed);
    {
      std::lock_guard lock(inboxMutex);
      inboxBytes += size;
      inbox.push_back(std::move(in));
    }
    inboxCv.notify_all();
    return true;
  }

  // A membership frame: small, copied without the pool (whose buffers are for model-sized payloads).
  bool toMemberInbox(const std::vector<zmq::message_t>& part) {
    std::unique_lock lock(memberMutex);
    if (memberInbox.size() >= opt.membership_inbox_max_frames) {
      memberInboxDropped.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    lock.unlock();  // the copy runs unlocked: only this thread appends
    const auto* h = part[1].data<std::byte>();
    auto payload = std::make_shared<Bytes>();
    for (std::size_t k = 2; k < part.size(); ++k) {
      const auto* b = part[k].data<std::byte>();
      payload->insert(payload->end(), b, b + part[k].size());
    }
    const std::size_t bytes = part[1].size() + payload->size();
    RawFrame f{Bytes(h, h + part[1].size()), std::move(payload)};
    framesReceived.fetch_add(1, std::memory_order_relaxed);
    bytesReceived.fetch_add(bytes, std::memory_order_relaxed);
    lock.lock();
    memberInbox.push_back(std::move(f));
    lock.unlock();
    memberCv.notify_all();
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
    std::vector<Channel*> throttled;
    std::vector<std::pair<PeerId, Link*>> monitors;
    std::deque<Command> batch;
    while (!stop.load()) {
      items.clear();
      writers.clear();
      monitors.clear();
      items.push_back({nullptr, wakeFd, ZMQ_POLLIN, 0});
      items.push_back({router.handle(), 0, ZMQ_POLLIN, 0});
      for (auto& [id, link] : links) {
        items.push_back({link->monitor.handle(), 0, ZMQ_POLLIN, 0});
        monitors.emplace_back(id, link.get());
      }
      const std::size_t zapItem = items.size();
      if (curve) items.push_back({curve->handler().handle(), 0, ZMQ_POLLIN, 0});
      const std::size_t firstWriter = items.size();
      std::int64_t timeoutMs = -1;  // until a throttled channel's bucket refills
      throttled.clear();
      for (auto& [id, link] : links)
        for (Channel& ch : link->channel) {
          if (ch.queue.empty()) continue;
          if (ch.shaper.capped()) {
            if (const auto wait = ch.shaper.refill(); wait > 0) {
              timeoutMs = timeoutMs < 0 ? wait : std::min(timeoutMs, wait);
              throttled.push_back(&ch);
              continue;
            }
          }
          items.push_back({ch.socket.handle(), 0, ZMQ_POLLOUT, 0});
          writers.push_back(&ch);
        }
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds{timeoutMs});
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (items[1].revents & ZMQ_POLLIN)
        for (int i = 0; i < 64 && readOne(); ++i) {  // a batch, then let the senders have a turn
        }
      for (std::size_t i = 0; i < monitors.size(); ++i)
        if (items[i + 2].revents & ZMQ_POLLIN) readMonitor(monitors[i].first, *monitors[i].second);
      if (curve && (items[zapItem].revents & ZMQ_POLLIN)) curve->answer();
      for (std::size_t i = 0; i < writers.size(); ++i)
        if (items[firstWriter + i].revents & ZMQ_POLLOUT) flush(*writers[i]);
      for (Channel* ch : throttled) flush(*ch);  // refilled meanwhile (flush checks again)
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
      memberCv.notify_all();
    }
  }
};

ZmqTransport::ZmqTransport(PeerId self, const std::string& listen, ZmqOptions options)
    : self_(self), impl_(std::make_unique<Impl>(options)) {
  impl_->bind(listen);
  endpoint_ = impl_->router.get(zmq::sockopt::last_endpoint);
  impl_->wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->wakeFd < 0) throw IoError("eventfd: " + std::string(std::strerror(errno)));
  // The self-test's key is recorded before the I/O thread (which answers its ZAP request) starts.
  CurveKeyPair stranger;
  if (impl_->curve) stranger = impl_->curve->stranger();
  impl_->io = std::thread([impl = impl_.get()] { impl->run(); });
  if (impl_->curve) {
    try {
      impl_->curve->selfTest(endpoint_, stranger, impl_->monitorSerial.fetch_add(1));
    } catch (...) {
      impl_->stop.store(true);
      impl_->wake();
      impl_->io.join();
      throw;
    }
  }
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
  impl_->throwIfFailed();
  std::lock_guard lock(impl_->disconnectMutex);
  return std::exchange(impl_->disconnected, {});
}

void ZmqTransport::removePeer(PeerId peer) { impl_->push(Command{Command::Type::Remove, peer, {}, nullptr}); }

void ZmqTransport::send(PeerId to, Bytes header, engine::SharedBytes payload) {
  impl_->push(Command{Command::Type::Send, to, Out{std::move(header), std::move(payload)}, nullptr});
}

bool ZmqTransport::receive(engine::RawFrame& out) {
  impl_->throwIfFailed();
  Impl::Incoming in;
  {
    std::lock_guard lock(impl_->inboxMutex);
    if (impl_->inbox.empty()) return false;
    in = std::move(impl_->inbox.front());
    impl_->inbox.pop_front();
    impl_->inboxBytes -= in.bytes;
  }
  // Unlocked: the I/O thread goes on filling the inbox meanwhile.
  if (!in.parts.empty()) in.frame.payload = impl_->pool->copy(in.parts.data(), in.parts.size(), in.bytes);
  out = std::move(in.frame);
  return true;
}

bool ZmqTransport::waitReadable(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->inboxMutex);
  impl_->inboxCv.wait_for(lock, timeout, [&] { return !impl_->inbox.empty() || impl_->failed.load(); });
  const bool ready = !impl_->inbox.empty();
  lock.unlock();
  impl_->throwIfFailed();
  return ready;
}

// These two never throw on a failed transport (the membership thread has no one to throw to): the node
// thread's next receive or waitReadable does, and the node stops.
bool ZmqTransport::receiveMembership(engine::RawFrame& out) {
  std::lock_guard lock(impl_->memberMutex);
  if (impl_->memberInbox.empty()) return false;
  out = std::move(impl_->memberInbox.front());
  impl_->memberInbox.pop_front();
  return true;
}

bool ZmqTransport::waitMembership(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->memberMutex);
  return impl_->memberCv.wait_for(lock, timeout, [&] { return !impl_->memberInbox.empty() || impl_->failed.load(); }) &&
         !impl_->memberInbox.empty();
}

ZmqStats ZmqTransport::stats() const {
  const Impl& i = *impl_;
  return {i.framesSent.load(), i.bytesSent.load(), i.framesReceived.load(), i.bytesReceived.load(),
          i.malformed.load(), i.sendDropped.load(), i.disconnectEvents.load(), i.curve ? i.curve->unlisted() : 0,
          i.wrongKeyForSender.load(), i.inboxDropped.load(), i.memberInboxDropped.load()};
}

}  // namespace gossip::peer
