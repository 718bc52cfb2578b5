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
#include "transport/zmq/links.h"
#include "transport/zmq/multipart.h"
#include "transport/zmq/sockets.h"

namespace gossip::peer {

namespace {

using engine::RawFrame;
using engine::SharedBytes;
using detail::BufferPool;
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
  std::atomic<std::uint64_t> framesReceived{0}, bytesReceived{0}, malformed{0}, wrongKeyForSender{0}, inboxDropped{0},
      memberInboxDropped{0};
  // CurveZMQ only (ZmqOptions::curve): the ZAP handler, the keys and the self-test. Declared after ctx, so
  // its socket closes before the context.
  std::unique_ptr<CurveAuth> curve;

  detail::Links links{opt};                     // I/O thread only, but takeDisconnects() and the counters
  std::atomic<std::uint64_t> monitorSerial{0};  // names the monitors' and the self-test's inproc addresses
  std::thread io;

  std::vector<zmq::message_t> received;  // readOne's parts, kept to reuse the vector's storage
  std::shared_ptr<BufferPool> pool;  // shared with the payloads handed out, which may outlive the transport

  explicit Impl(ZmqOptions o)
      : opt(o), curve(o.curve ? std::make_unique<CurveAuth>(ctx, o.curve) : nullptr),
        pool(std::make_shared<BufferPool>(o.recycled_buffers)) {}
  ~Impl() {
    if (wakeFd >= 0) ::close(wakeFd);
  }

  void bind(const std::string& listen) {
    detail::setCommon(router, opt);
    if (curve) curve->serve(router);
    detail::bindListener(router, listen);
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
  auto link = detail::connectLink(impl_->ctx, impl_->opt, impl_->curve.get(), impl_->monitorSerial, self_, endpoint);
  Command c{Command::Type::Add, peer, {}, std::move(link)};
  impl_->push(std::move(c));
}

std::vector<PeerId> ZmqTransport::takeDisconnects() {
  impl_->throwIfFailed();
  return impl_->links.takeDisconnects();
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
  return {i.links.framesSent(), i.links.bytesSent(), i.framesReceived.load(), i.bytesReceived.load(),
          i.malformed.load(), i.links.sendDropped(), i.links.disconnects(), i.curve ? i.curve->unlisted() : 0,
          i.wrongKeyForSender.load(), i.inboxDropped.load(), i.memberInboxDropped.load()};
}

}  // namespace gossip::peer
