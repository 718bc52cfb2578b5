#pragma once
// PeerTransport: what a daemon node needs of its network (daemon/node/): the engine's frames
// (engine::Transport), where each peer is, the membership frames in an inbox of their own, and hints that
// a peer's connection broke. The daemon's implementation is ZmqTransport (transport/zmq/); the in-process
// node test steps whole nodes over one of its own (transport/inproc/inproc_peer.h). Nothing here names
// ZeroMQ: the node is built from this interface, so that a test can give it another network and a clock.
//
// Contract (every implementation):
//  - send() queues and returns; a frame for an unknown peer is dropped and counted (send_dropped).
//  - Membership frames (engine/frame.h's FrameKind::Membership) are read only with receiveMembership(), by
//    one consumer (the membership thread); every other frame with receive(). A frame is in exactly one.
//  - takeDisconnects() and takeHandshakeFailures() return each event once. A disconnect is a hint for the
//    failure detector to probe at once, never a verdict.
//  - waitReadable()/waitMembership() block for at most `timeout` (an implementation stepped by a test may
//    return at once); they never take the frame.
// Threads: send, addPeer, removePeer, takeHandshakeFailures and stats from any thread; receive and
// waitReadable from the node thread; receiveMembership, waitMembership and takeDisconnects from the
// membership thread.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/transport.h"

namespace gossip::peer {

// Counters of a node's transport since it was made (status.json, /metrics).
struct TransportStats {
  std::uint64_t frames_sent = 0;        // handed to the network (not necessarily delivered)
  std::uint64_t bytes_sent = 0;         // header + payload bytes of those frames
  std::uint64_t frames_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t malformed_dropped = 0;  // incoming messages with a wrong number of parts
  std::uint64_t send_dropped = 0;       // unknown peer, queue overflow, or still queued when a peer was removed
  std::uint64_t disconnects = 0;        // control connections that broke (each one a probe hint)
  std::uint64_t unlisted_key = 0;       // CurveZMQ: connections refused because their key is not listed
  std::uint64_t wrong_key_for_sender = 0;  // CurveZMQ: frames naming another sender than their key's id
  std::uint64_t inbox_dropped = 0;      // frames read while the inbox was full, dropped
  std::uint64_t membership_inbox_dropped = 0;  // membership frames read while their inbox was full, dropped
};

// A handshake that failed (issue 28: CurveZMQ on at one end and off at the other never got as far as a
// refusal, and nothing said why): on one of our links (`incoming` false; `endpoint` is the peer's) or on a
// connection to our listening address (`incoming` true). `code` is the backend's own value (for ZeroMQ the
// monitor event's: a ZMQ_PROTOCOL_ERROR_* for a protocol failure, the ZAP status for an auth failure).
struct HandshakeFailure {
  enum class Kind {
    Vague,      // closed during the handshake, no detail (often beside a specific failure)
    Mechanism,  // the two ends use different security mechanisms: CurveZMQ at one end only
    Protocol,   // another protocol error
    Auth,       // the other end refused our key
  };
  std::string endpoint;
  bool incoming = false;
  Kind kind = Kind::Vague;
  std::uint32_t code = 0;
  // One line for the log, with the likely cause: e.g. a security mechanism mismatch names security.enable
  // as set here and as probably set at the other end.
  std::string describe(bool curveHere) const;
};

class PeerTransport : public engine::Transport {
 public:
  // The bound address with the real port (e.g. "tcp://127.0.0.1:41234"): what peers connect to unless
  // node.advertise says otherwise.
  virtual const std::string& endpoint() const = 0;
  // Sets (or replaces) where frames for `peer` go; throws IoError on an invalid endpoint.
  virtual void addPeer(PeerId peer, const std::string& endpoint) = 0;
  // Forgets `peer`: frames still queued for it are dropped.
  virtual void removePeer(PeerId peer) = 0;
  virtual std::vector<PeerId> takeDisconnects() = 0;
  virtual std::vector<HandshakeFailure> takeHandshakeFailures() = 0;
  // Until a frame other than a membership frame is waiting (true) or the timeout passes (false).
  virtual bool waitReadable(std::chrono::milliseconds timeout) = 0;
  virtual bool receiveMembership(engine::RawFrame& out) = 0;
  virtual bool waitMembership(std::chrono::milliseconds timeout) = 0;
  virtual TransportStats stats() const = 0;
};

}  // namespace gossip::peer
