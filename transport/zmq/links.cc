// The outgoing side (links.h): connecting a link's DEALERs, the per-channel queues, sending, and the
// monitors' disconnect events. I/O thread only, but connectLink() (addPeer's caller) and takeDisconnects().
#include "transport/zmq/links.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "engine/frame.h"
#include "transport/zmq/multipart.h"
#include "transport/zmq/sockets.h"

namespace gossip::peer::detail {

namespace {

constexpr int kControl = 0;  // channel index of control frames
constexpr int kModel = 1;    // channel index of model frames

// The data channel carries what is model-sized: a round's model frames, a state transfer's chunks and the
// chunks of an edge's public state (EdgePart; EdgeOpen, which the simulator's engine sends whole). The control channel keeps what must not wait behind hundreds of MB:
// membership probes and acks, edge agreement, delivery acks and state requests. (State chunks on the
// control channel queued a 400 MB transfer ahead of the probes, and past the queue's 256-frame limit the
// oldest frames, probes among them, were dropped.) Anything whose kind cannot be read goes on the data channel.
int channelOf(const Bytes& header) {
  const auto kind = engine::peekKindByte(header);
  if (!kind) return kModel;
  switch (static_cast<engine::FrameKind>(*kind)) {
    case engine::FrameKind::Model:
    case engine::FrameKind::State:
    case engine::FrameKind::EdgeOpen:
    case engine::FrameKind::EdgePart:
      return kModel;
    default:
      return kControl;
  }
}

}  // namespace

std::unique_ptr<Link> connectLink(zmq::context_t& ctx, const ZmqOptions& opt, const CurveAuth* curve,
                                  std::atomic<std::uint64_t>& serial, PeerId self, const std::string& endpoint) {
  auto link = std::make_unique<Link>();
  link->endpoint = endpoint;
  for (int c : {kControl, kModel}) {
    zmq::socket_t s = makeDealer(ctx, opt, c == kModel);
    if (curve) curve->setClient(s, opt.curve->node);
    if (c == kControl)  // before it connects
      link->monitor = monitorSocket(ctx, s, ZMQ_EVENT_DISCONNECTED | kHandshakeFailureEvents, "link-monitor", serial.fetch_add(1));
    link->channel[c].socket = std::move(s);
    if (c == kModel && opt.link_bytes_per_second > 0)
      link->channel[c].shaper = Shaper(opt.link_bytes_per_second, opt.link_burst_bytes);
    try {
      link->channel[c].socket.connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw IoError("peer " + std::to_string(self) + " endpoint " + endpoint + ": " + e.what());
    }
  }
  return link;
}

Link::~Link() { stopMonitor(channel[kControl].socket); }

void Links::add(PeerId peer, std::unique_ptr<Link> link) {
  remove(peer);
  links_[peer] = std::move(link);
}

void Links::remove(PeerId peer) {
  auto it = links_.find(peer);
  if (it == links_.end()) return;
  for (const Channel& ch : it->second->channel) sendDropped_.fetch_add(ch.queue.size(), std::memory_order_relaxed);
  links_.erase(it);  // linger 0: the sockets close at once
}

void Links::send(PeerId peer, Out frame) {
  auto it = links_.find(peer);
  if (it == links_.end()) {
    sendDropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Channel& ch = it->second->channel[channelOf(frame.header)];
  if (ch.queue.size() >= opt_.max_queued_per_channel) {
    ch.queue.pop_front();
    sendDropped_.fetch_add(1, std::memory_order_relaxed);
  }
  ch.queue.push_back(std::move(frame));
  flush(ch);
}

void Links::watchMonitors(std::vector<zmq_pollitem_t>& items) {
  monitors_.clear();
  for (auto& [id, link] : links_) {
    items.push_back({link->monitor.handle(), 0, ZMQ_POLLIN, 0});
    monitors_.emplace_back(id, link.get());
  }
}

void Links::watchWriters(std::vector<zmq_pollitem_t>& items, std::int64_t& timeoutMs) {
  writers_.clear();
  throttled_.clear();
  for (auto& [id, link] : links_)
    for (Channel& ch : link->channel) {
      if (ch.queue.empty()) continue;
      if (ch.shaper.capped()) {
        if (const auto wait = ch.shaper.refill(); wait > 0) {
          timeoutMs = timeoutMs < 0 ? wait : std::min(timeoutMs, wait);
          throttled_.push_back(&ch);
          continue;
        }
      }
      items.push_back({ch.socket.handle(), 0, ZMQ_POLLOUT, 0});
      writers_.push_back(&ch);
    }
}

void Links::readMonitors(const std::vector<zmq_pollitem_t>& items, std::size_t first) {
  for (std::size_t i = 0; i < monitors_.size(); ++i)
    if (items[first + i].revents & ZMQ_POLLIN) readMonitor(monitors_[i].first, *monitors_[i].second);
}

void Links::flushWritable(const std::vector<zmq_pollitem_t>& items, std::size_t first) {
  for (std::size_t i = 0; i < writers_.size(); ++i)
    if (items[first + i].revents & ZMQ_POLLOUT) flush(*writers_[i]);
  for (Channel* ch : throttled_) flush(*ch);  // refilled meanwhile (flush checks again)
}

std::vector<PeerId> Links::takeDisconnects() {
  std::lock_guard lock(disconnectMutex_);
  return std::exchange(disconnected_, {});
}

std::vector<HandshakeFailure> Links::takeHandshakeFailures() {
  std::lock_guard lock(disconnectMutex_);
  return std::exchange(handshakeFailures_, {});
}

// Sends queued frames until the socket would block or the channel's shaper runs out of tokens (the loop
// polls again when the bucket has refilled).
void Links::flush(Channel& ch) {
  while (!ch.queue.empty()) {
    if (ch.shaper.capped() && ch.shaper.refill() > 0) return;
    Out& o = ch.queue.front();
    if (!sendFrame(ch.socket, o.header, o.payload)) return;
    const std::size_t bytes = o.header.size() + (o.payload ? o.payload->size() : 0);
    framesSent_.fetch_add(1, std::memory_order_relaxed);
    bytesSent_.fetch_add(bytes, std::memory_order_relaxed);
    ch.shaper.spend(bytes);
    ch.queue.pop_front();
  }
}

// Reads every event waiting on a link's monitor; a DISCONNECTED notes the peer, a handshake failure is kept
// for takeHandshakeFailures().
void Links::readMonitor(PeerId peer, Link& link) {
  while (const auto e = readMonitorEvent(link.monitor)) {
    if (e->event == ZMQ_EVENT_DISCONNECTED) {
      disconnects_.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lock(disconnectMutex_);
      if (std::find(disconnected_.begin(), disconnected_.end(), peer) == disconnected_.end()) disconnected_.push_back(peer);
    } else if (e->event & kHandshakeFailureEvents) {
      std::lock_guard lock(disconnectMutex_);
      if (handshakeFailures_.size() < kMaxHandshakeFailures)
        handshakeFailures_.push_back(handshakeFailure(*e, link.endpoint, false));
    }
  }
}

}  // namespace gossip::peer::detail
