// ZmqTransport's own code (zmq_transport.h): the public calls, the command FIFO that carries send(),
// addPeer() and removePeer() to the I/O thread, and that thread's poll loop, which reads the listening
// ROUTER into the inboxes (inbox.h), answers ZAP requests (curve_auth.h), reads the links' disconnect
// monitors and sends what the links have queued (links.h).
//
// Threading: the I/O thread (run) owns every socket once the constructor has started it; the FIFO is behind
// cmdMutex and an eventfd wakes the thread. A failure of the thread is kept in `failure`, written once before
// the atomic `failed` is set, and rethrown by every later call but stats() and the membership inbox's two.
#include "transport/zmq/zmq_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "core/error.h"
#include "transport/zmq/curve_auth.h"
#include "transport/zmq/inbox.h"
#include "transport/zmq/links.h"
#include "transport/zmq/multipart.h"
#include "transport/zmq/sockets.h"

namespace gossip::peer {

namespace {

using detail::CurveAuth;
using detail::Link;
using detail::Out;

struct Command {
  enum class Type { Send, Add, Remove } type;
  PeerId peer = 0;
  Out frame;                   // Send
  std::unique_ptr<Link> link;  // Add
};

}  // namespace

struct ZmqTransport::Impl {
  ZmqOptions opt;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  // The ROUTER's handshake failures (a peer speaking another mechanism): read by the I/O thread; closes
  // before the ROUTER, after ~Impl stopped the monitor (sockets.h, stopMonitor).
  zmq::socket_t routerMonitor;
  std::mutex handshakeMutex;
  std::vector<HandshakeFailure> incomingFailures;  // since the last takeHandshakeFailures(), bounded
  int wakeFd = -1;

  std::mutex cmdMutex;
  std::deque<Command> commands;

  detail::Inboxes inboxes{opt};  // what the I/O thread received, for the node and the membership threads

  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;  // written once by the I/O thread before `failed` is set
  std::atomic<std::uint64_t> malformed{0}, wrongKeyForSender{0};
  // CurveZMQ only (ZmqOptions::curve): the ZAP handler, the keys and the self-test. Declared after ctx, so
  // its socket closes before the context.
  std::unique_ptr<CurveAuth> curve;

  detail::Links links{opt};                     // I/O thread only, but takeDisconnects() and the counters
  std::atomic<std::uint64_t> monitorSerial{0};  // names the monitors' and the self-test's inproc addresses
  std::thread io;

  std::vector<zmq::message_t> received;  // readOne's parts, kept to reuse the vector's storage

  explicit Impl(ZmqOptions o) : opt(o), curve(o.curve ? std::make_unique<CurveAuth>(ctx, o.curve) : nullptr) {}
  ~Impl() {
    detail::stopMonitor(router);
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void bind(const std::string& listen) {
    detail::setCommon(router, opt);
    if (curve) curve->serve(router);
    // Protocol failures only: an auth failure here is a key we refused (counted as unlisted_key, and the
    // CurveZMQ self-test makes one on purpose).
    routerMonitor = detail::monitorSocket(ctx, router, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL,
                                          "router-monitor", monitorSerial.fetch_add(1));
    detail::bindListener(router, listen);
  }

  void readRouterMonitor() {
    while (const auto e = detail::readMonitorEvent(routerMonitor)) {
      std::lock_guard lock(handshakeMutex);
      if (incomingFailures.size() < 256) incomingFailures.push_back(detail::handshakeFailure(*e, e->address, true));
    }
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
    inboxes.deliver(part);
    return true;
  }

  void apply(Command& c) {
    switch (c.type) {
      case Command::Type::Add:
        links.add(c.peer, std::move(c.link));
        break;
      case Command::Type::Remove:
        links.remove(c.peer);
        break;
      case Command::Type::Send:
        links.send(c.peer, std::move(c.frame));
        break;
    }
  }

  void loop() {
    std::vector<zmq_pollitem_t> items;
    std::deque<Command> batch;
    while (!stop.load()) {
      items.clear();
      items.push_back({nullptr, wakeFd, ZMQ_POLLIN, 0});
      items.push_back({router.handle(), 0, ZMQ_POLLIN, 0});
      items.push_back({routerMonitor.handle(), 0, ZMQ_POLLIN, 0});
      const std::size_t firstMonitor = items.size();
      links.watchMonitors(items);
      const std::size_t zapItem = items.size();
      if (curve) items.push_back({curve->handler().handle(), 0, ZMQ_POLLIN, 0});
      const std::size_t firstWriter = items.size();
      std::int64_t timeoutMs = -1;  // until a throttled channel's bucket refills
      links.watchWriters(items, timeoutMs);
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds{timeoutMs});
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;
        throw;
      }
      if (items[1].revents & ZMQ_POLLIN)
        for (int i = 0; i < 64 && readOne(); ++i) {  // a batch, then let the senders have a turn
        }
      if (items[2].revents & ZMQ_POLLIN) readRouterMonitor();
      links.readMonitors(items, firstMonitor);
      if (curve && (items[zapItem].revents & ZMQ_POLLIN)) curve->answer();
      links.flushWritable(items, firstWriter);
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
      inboxes.wakeAll();
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
  if (impl_->curve) stranger = impl_->curve->makeStranger();
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
  auto link = detail::connectLink(impl_->ctx, impl_->opt, impl_->curve.get(), impl_->monitorSerial, self_, endpoint);
  Command c{Command::Type::Add, peer, {}, std::move(link)};
  impl_->push(std::move(c));
}

std::vector<PeerId> ZmqTransport::takeDisconnects() {
  impl_->throwIfFailed();
  return impl_->links.takeDisconnects();
}

std::vector<HandshakeFailure> ZmqTransport::takeHandshakeFailures() {
  std::vector<HandshakeFailure> out = impl_->links.takeHandshakeFailures();
  std::lock_guard lock(impl_->handshakeMutex);
  for (auto& f : impl_->incomingFailures) out.push_back(std::move(f));
  impl_->incomingFailures.clear();
  return out;
}

void ZmqTransport::removePeer(PeerId peer) { impl_->push(Command{Command::Type::Remove, peer, {}, nullptr}); }

void ZmqTransport::send(PeerId to, Bytes header, engine::SharedBytes payload) {
  impl_->push(Command{Command::Type::Send, to, Out{std::move(header), std::move(payload)}, nullptr});
}

bool ZmqTransport::receive(engine::RawFrame& out) {
  impl_->throwIfFailed();
  return impl_->inboxes.pop(out);
}

bool ZmqTransport::waitReadable(std::chrono::milliseconds timeout) {
  const bool ready = impl_->inboxes.waitFrames(timeout, impl_->failed);
  impl_->throwIfFailed();
  return ready;
}

// These two never throw on a failed transport (the membership thread has no one to throw to): the node
// thread's next receive or waitReadable does, and the node stops.
bool ZmqTransport::receiveMembership(engine::RawFrame& out) { return impl_->inboxes.popMembership(out); }

bool ZmqTransport::waitMembership(std::chrono::milliseconds timeout) {
  return impl_->inboxes.waitMembership(timeout, impl_->failed);
}

std::size_t ZmqTransport::listedKeys() const { return impl_->opt.curve ? impl_->opt.curve->allowed.size() : 0; }

TransportStats ZmqTransport::stats() const {
  const Impl& i = *impl_;
  return {i.links.framesSent(), i.links.bytesSent(), i.inboxes.framesReceived(), i.inboxes.bytesReceived(),
          i.malformed.load(), i.links.sendDropped(), i.links.disconnects(), i.curve ? i.curve->unlisted() : 0,
          i.wrongKeyForSender.load(), i.inboxes.dropped(), i.inboxes.membershipDropped()};
}

}  // namespace gossip::peer
