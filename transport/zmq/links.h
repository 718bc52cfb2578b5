#pragma once
// Links: the outgoing side of the transport. Per peer, two DEALER sockets connected to the peer's ROUTER,
// one for control frames (header kind != Model, read with engine/frame.h's peekKindByte) and one for model
// frames. A control frame therefore never queues behind a huge model frame, neither in our queues nor in a
// TCP stream: the two connections are separate TCP streams and the receiving ROUTER fair-queues them. Order
// is kept per (link, channel), not between the two channels (the engine's per-link sequence numbers see
// the difference). Frames wait in a bounded queue per channel until their DEALER is writable (the oldest is
// dropped and counted when it is full), and the model channel may be capped (shaper.h). The control
// DEALER's socket monitor reports a broken connection: the peer is noted for takeDisconnects(), a hint to
// probe, never a verdict (libzmq reconnects by itself).
//
// Threading: connectLink() runs on addPeer()'s caller, so a bad endpoint throws there; the Link then goes to
// the I/O thread through the transport's command FIFO (its mutex is the memory barrier zmq asks for when a
// socket changes threads). Links belongs to the I/O thread, but for takeDisconnects() (any thread, under
// its own mutex) and the counters (atomics).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "core/bytes.h"
#include "engine/transport.h"
#include "transport/zmq/curve_auth.h"
#include "transport/zmq/shaper.h"
#include "transport/zmq/zmq_transport.h"

namespace gossip::peer::detail {

struct Out {
  Bytes header;
  engine::SharedBytes payload;
};

struct Channel {
  zmq::socket_t socket;
  std::deque<Out> queue;
  Shaper shaper;  // ZmqOptions::link_bytes_per_second, model channel only
};

struct Link {
  Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  // Stops the control DEALER's monitor before any socket closes (sockets.h, stopMonitor: otherwise a
  // disconnect seen while the DEALER closes blocks libzmq's I/O thread for good).
  ~Link();

  Channel channel[2];  // kControl, kModel (links.cc)
  zmq::socket_t monitor;  // the control DEALER's socket monitor: a PAIR on an inproc address
  std::string endpoint;   // where it connects (for a handshake failure's line)
};

// Creates and connects both DEALERs of a link to `endpoint`; `serial` names the monitor's inproc address.
// `curve` is null without CurveZMQ. Throws IoError on an invalid endpoint.
std::unique_ptr<Link> connectLink(zmq::context_t& ctx, const ZmqOptions& opt, const CurveAuth* curve,
                                  std::atomic<std::uint64_t>& serial, PeerId self, const std::string& endpoint);

class Links {
 public:
  explicit Links(const ZmqOptions& opt) : opt_(opt) {}

  // The I/O thread's commands. add() replaces a peer's link; remove() closes it at once. Frames still
  // queued on a replaced or removed link are dropped and counted.
  void add(PeerId peer, std::unique_ptr<Link> link);
  void remove(PeerId peer);
  // Queues a frame on its channel and sends what the socket takes. Unknown peer: dropped and counted.
  void send(PeerId peer, Out frame);

  // The poll set, built before each poll in this order: watchMonitors() appends one POLLIN item per link's
  // monitor, watchWriters() one POLLOUT item per channel with frames to send and tokens to send them, and
  // lowers `timeoutMs` (-1: none) to when the first throttled channel may send again. After the poll,
  // readMonitors() and flushWritable() take the items back from the indices the watch calls started at;
  // no link may be added or removed in between (commands are applied after both).
  void watchMonitors(std::vector<zmq_pollitem_t>& items);
  void watchWriters(std::vector<zmq_pollitem_t>& items, std::int64_t& timeoutMs);
  void readMonitors(const std::vector<zmq_pollitem_t>& items, std::size_t first);
  void flushWritable(const std::vector<zmq_pollitem_t>& items, std::size_t first);

  // Any thread: the peers whose control connection broke since the last call, each once.
  std::vector<PeerId> takeDisconnects();
  // Any thread: the control connections' handshake failures since the last call (HandshakeFailure).
  std::vector<HandshakeFailure> takeHandshakeFailures();

  std::uint64_t framesSent() const { return framesSent_.load(); }
  std::uint64_t bytesSent() const { return bytesSent_.load(); }
  std::uint64_t sendDropped() const { return sendDropped_.load(); }
  std::uint64_t disconnects() const { return disconnects_.load(); }

 private:
  void flush(Channel& ch);
  void readMonitor(PeerId peer, Link& link);

  const ZmqOptions& opt_;
  std::map<PeerId, std::unique_ptr<Link>> links_;
  // The current poll set's entries (watch* fill them, readMonitors/flushWritable read them).
  std::vector<std::pair<PeerId, Link*>> monitors_;
  std::vector<Channel*> writers_;
  std::vector<Channel*> throttled_;
  std::mutex disconnectMutex_;  // guards disconnected_ and handshakeFailures_
  std::vector<PeerId> disconnected_;  // since the last takeDisconnects(), without repeats
  std::vector<HandshakeFailure> handshakeFailures_;  // since the last takeHandshakeFailures(), at most kMaxHandshakeFailures
  static constexpr std::size_t kMaxHandshakeFailures = 256;  // a peer retrying for hours is one line a minute anyway
  std::atomic<std::uint64_t> framesSent_{0}, bytesSent_{0}, sendDropped_{0}, disconnects_{0};
};

}  // namespace gossip::peer::detail
