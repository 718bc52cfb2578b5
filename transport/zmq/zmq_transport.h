#pragma once
// ZmqTransport: the daemon's PeerTransport (transport/peer/peer_transport.h) over ZeroMQ/TCP (DESIGN.md §3, §6). Like every transport it never
// interprets a frame: it moves [header, payload] pairs and counts bytes. This header is what its users see;
// how it works is in the other files of transport/zmq/, one job each:
//   multipart.h    a frame as a multipart message: the header, then the payload in 1 MiB parts (zero copy)
//   links.h        outgoing: per peer a control and a model DEALER, bounded queues, disconnect hints
//   inbox.h        incoming: the frame inbox and the membership inbox, their bounds, copies off the I/O thread
//   shaper.h       the bandwidth cap of a model channel (ZmqOptions::link_bytes_per_second)
//   sockets.h      every socket option, and why
//   curve_auth.h   CurveZMQ: the ZAP handler, server and client keys (curve_keys.h), sender check, self-test
// (request_server.h, in this folder too, is not part of the transport: it is the trainer bridge's socket.)
//
// Contract
//  - Incoming: one ROUTER bound to the listen address. A message that is not a well-formed frame is dropped
//    and counted (malformed_dropped), never thrown. A frame read while its inbox is full is dropped and
//    counted (inbox_dropped, membership_inbox_dropped); control frames have room beyond the model frames'
//    limit, so a flood of model frames cannot starve them. Replica methods resend what was dropped;
//    stateless ones mix it as missing.
//  - Two inboxes: Membership frames (header byte 5, engine/frame.h) are read with receiveMembership() and
//    waitMembership() by the membership thread (daemon/node/membership_runner.h), every other frame with
//    receive() and waitReadable() by the node thread, so probes and acks are taken while the node computes.
//  - Outgoing: order is kept per (peer, channel), the channels being control frames (kind != Model) and
//    model frames, on separate connections: a control frame never waits behind a model frame, and the two
//    may overtake each other (the engine's per-link sequence numbers see it). send() queues and returns;
//    a frame for an unknown peer, beyond a full queue or still queued when its peer is removed is dropped
//    and counted (send_dropped). Who sent a frame is in its header, never in the connection.
//  - Disconnects: a broken control connection is a hint for the failure detector to probe at once
//    (takeDisconnects()), never a verdict (DESIGN.md: a ZeroMQ disconnect is a suspicion, never a death).
//  - Threads: zmq sockets are not thread-safe, so one I/O thread owns them all. send(), addPeer() and
//    removePeer() append commands to one mutex-protected FIFO and wake the I/O thread through an eventfd it
//    polls next to the sockets; it drains the whole FIFO on every wake-up (each command is O(1) and never
//    blocks). addPeer() creates and connects the sockets on the caller's thread, so a bad endpoint throws
//    there. A payload of 1 MiB or more is copied by receive(), on the consumer's thread, never by the I/O
//    thread, so a 200 MB frame does not hold every probe, ack and send of the node behind its copy.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport.h"
#include "transport/peer/peer_transport.h"
#include "transport/zmq/curve_keys.h"

namespace gossip::peer {

// The payload part size (multipart.h). Part of the wire format: every daemon must agree.
inline constexpr std::size_t kPayloadPartBytes = std::size_t{1} << 20;

struct ZmqOptions {
  // TCP keepalive: probes start after this many idle seconds, 1 s apart, 5 unanswered drop the connection
  // (ZMTP heartbeats are off: see setCommon in sockets.cc).
  int keepalive_idle_s = 5;
  int handshake_ivl_ms = 5000;
  int reconnect_ivl_ms = 100;
  int reconnect_ivl_max_ms = 5000;
  std::size_t max_queued_per_channel = 256;                       // per peer and channel, before dropping
  std::size_t membership_inbox_max_frames = 4096;                 // membership frames waiting, before dropping
  std::size_t inbox_max_frames = 4096;                            // drop incoming frames beyond this...
  std::uint64_t inbox_max_bytes = std::uint64_t{1} << 30;         // ...or this many queued payload bytes
  // CurveZMQ (docs/security.md): when set, the listening socket is a CURVE server with the cluster key,
  // accepts only connections whose node key is listed (a ZAP handler on the I/O thread answers libzmq's
  // requests; ZAP_ENFORCE_DOMAIN makes libzmq refuse everyone if no handler answered), and drops every
  // frame whose header names another sender than the id its key is listed under. The constructor checks
  // that an unlisted key is refused before it returns (IoError otherwise).
  std::shared_ptr<const CurveKeys> curve;
  // Bandwidth cap per outgoing link for experiments without network namespaces (config faults.link_mbit):
  // a token bucket on each peer's model channel, 0 = none. Control frames (acks, probes, membership; about
  // 1% of the bytes) are not capped, so a capped link never delays failure detection.
  double link_bytes_per_second = 0;
  std::size_t link_burst_bytes = 256 * 1024;
};

class ZmqTransport final : public PeerTransport {
 public:
  // Binds `listen` (e.g. "tcp://127.0.0.1:0" for an ephemeral port); throws IoError if it cannot.
  ZmqTransport(PeerId self, const std::string& listen, ZmqOptions options = {});
  ~ZmqTransport() override;  // stops and joins the I/O thread; frames still queued are abandoned
  // Once the I/O thread has failed, every call below (but stats) throws IoError naming the failure.
  ZmqTransport(const ZmqTransport&) = delete;
  ZmqTransport& operator=(const ZmqTransport&) = delete;

  PeerId id() const { return self_; }
  // The bound address with the real port, e.g. "tcp://127.0.0.1:41234".
  const std::string& endpoint() const override { return endpoint_; }

  // Sets (or replaces) where frames for `peer` go. Throws IoError on an invalid endpoint.
  void addPeer(PeerId peer, const std::string& endpoint) override;
  // Forgets `peer`: its connections close at once and frames still queued for it are dropped.
  void removePeer(PeerId peer) override;
  // Peers whose control connection broke (TCP reset or close, or TCP keepalive timeout) since the last call, each
  // once. A hint for the failure detector to probe at once, never a verdict: libzmq reconnects by itself.
  std::vector<PeerId> takeDisconnects() override;
  // Handshakes that failed since the last call, on our links and at our listening socket (any thread).
  // Many per peer: libzmq retries the connection every reconnect interval; the caller rate-limits its lines.
  std::vector<HandshakeFailure> takeHandshakeFailures() override;

  void send(PeerId to, Bytes header, engine::SharedBytes payload) override;
  bool receive(engine::RawFrame& out) override;
  // Blocks until a frame is waiting (true) or the timeout passes (false). Does not take the frame.
  bool waitReadable(std::chrono::milliseconds timeout) override;
  // The membership inbox ("Two inboxes" above): one consumer thread, which may differ from receive()'s.
  // These two never throw on a failed transport: the node thread's next receive or waitReadable does.
  bool receiveMembership(engine::RawFrame& out) override;
  bool waitMembership(std::chrono::milliseconds timeout) override;

  TransportStats stats() const override;
  // CurveZMQ: how many node keys are listed (0 without it).
  std::size_t listedKeys() const;

 private:
  struct Impl;
  PeerId self_;
  std::string endpoint_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip::peer
