#pragma once
// ZmqTransport: the engine's Transport over ZeroMQ/TCP (DESIGN.md §3, §6). Like every transport it never
// interprets a frame: it moves [header, payload] pairs and counts bytes.
//
// Design
//  - Incoming: one ROUTER socket bound to the listen address. Every message must have the parts
//    [routing id, header, payload part...]; anything else is dropped and counted (malformed_dropped), never
//    thrown.
//  - Payload parts: a payload over kPayloadPartBytes travels as several parts of exactly that size, the last
//    one shorter; the receiver copies them into one buffer (the copy it made of a single part before).
//    Why: with CurveZMQ libzmq encrypts and decrypts each part whole on its I/O thread, which also serves
//    every other connection. A 64 MB part held that thread for long enough that the failure detector's
//    probes and acks, waiting behind it, timed out and the two daemons declared each other dead (issue 8);
//    1 MiB parts let the control connection's traffic through between them. Plain TCP sends the same
//    parts (zero copy either way), so there is one wire format.
//  - Outgoing: per peer, two DEALER sockets connected to the peer's ROUTER, one for control frames (header
//    byte 5 = kind != Model) and one for model frames. A control frame therefore never queues behind a huge
//    model frame, neither in our queues nor in a TCP stream: the two connections are separate TCP streams and
//    the receiving ROUTER fair-queues them. Order is kept per (link, channel), not between the two channels
//    (the engine's per-link sequence numbers see the difference). DEALERs set no routing id: the ROUTER
//    gives every connection its own (fixed ids let two links to one endpoint evict each other; see
//    makeDealer() in sockets.cc). Who sent a frame is in its header.
//  - Zero copy on send: the payload part is a zmq::message_t over the shared buffer's bytes whose free
//    function deletes a heap-held copy of the shared_ptr, so the buffer lives until libzmq is done with it.
//    Receiving copies the payload once into a Bytes (the engine's RawFrame holds a std::vector); large
//    buffers are recycled through a small pool once the engine drops them, so the copy does not page-fault.
//    A payload of 1 MiB or more is copied by receive(), on the consumer's thread, not by the I/O thread: the
//    I/O thread only moves libzmq's parts into the inbox, so a 200 MB frame does not hold every probe, ack
//    and send of the node behind its copy (issue 27).
//  - Threads: zmq sockets are not thread-safe, so one I/O thread owns them all. send(), addPeer() and
//    removePeer() append commands to one mutex-protected FIFO and wake the I/O thread through an eventfd
//    polled by zmq_poll next to the sockets. The I/O thread drains the whole FIFO on every wake-up (each
//    command is O(1) and never blocks), so the FIFO needs no priorities; frames then wait in per-peer,
//    per-channel queues until their DEALER is writable (bounded: the oldest frame is dropped and counted).
//    Received frames go to a mutex-protected inbox that receive() pops; while the inbox is over its limit
//    the I/O thread still reads the ROUTER but drops model frames it reads (inbox_dropped; control
//    frames have room for as many again, so a flood cannot starve the failure detector): never letting libzmq
//    stop reading a connection avoids a libzmq 4.3.4 abort (see bindListener() in sockets.cc). Replica
//    methods resend what was dropped; stateless ones mix it as missing.
//  - Two inboxes: Membership frames (header byte 5, engine/frame.h) go to an inbox of their own, read with
//    receiveMembership()/waitMembership() by the membership thread (daemon/membership_runner.h); every other
//    frame goes to the inbox of receive()/waitReadable(), read by the node thread. So probes and acks are
//    taken within milliseconds while the node thread computes for seconds and its inbox fills (issue 27: a
//    20M-parameter model's rounds held the one loop long enough for healthy nodes to be declared dead). Each
//    inbox has its own mutex, condition and bound; a membership frame beyond the bound is dropped and
//    counted (membership_inbox_dropped), like a model frame beyond the inbox's.
//  - Disconnects: each control DEALER has a socket monitor (an inproc PAIR polled by the I/O thread); a
//    DISCONNECTED event queues the peer for takeDisconnects(), which the daemon turns into an immediate
//    membership probe (DESIGN.md: a ZeroMQ disconnect is a suspicion, never a death).
//  - addPeer() creates and connects the DEALERs in the caller's thread (so a bad endpoint throws there) and
//    hands them to the I/O thread through the FIFO (the mutex is the memory barrier zmq asks for).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport.h"
#include "transport/zmq/curve_keys.h"

namespace gossip::peer {

// The payload part size (see "Payload parts" above). Part of the wire format: every daemon must agree.
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
  // Large receive buffers (>= 1 MiB) kept for reuse once the engine releases them: about one per neighbour
  // avoids page-faulting a fresh buffer for every model frame; each idle one holds its capacity.
  std::size_t recycled_buffers = 8;
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

struct ZmqStats {
  std::uint64_t frames_sent = 0;        // handed to libzmq (not necessarily delivered)
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

class ZmqTransport final : public engine::Transport {
 public:
  // Binds `listen` (e.g. "tcp://127.0.0.1:0" for an ephemeral port); throws IoError if it cannot.
  ZmqTransport(PeerId self, const std::string& listen, ZmqOptions options = {});
  ~ZmqTransport() override;  // stops and joins the I/O thread; frames still queued are abandoned
  // Once the I/O thread has failed, every call below (but stats) throws IoError naming the failure.
  ZmqTransport(const ZmqTransport&) = delete;
  ZmqTransport& operator=(const ZmqTransport&) = delete;

  PeerId id() const { return self_; }
  // The bound address with the real port, e.g. "tcp://127.0.0.1:41234".
  const std::string& endpoint() const { return endpoint_; }

  // Sets (or replaces) where frames for `peer` go. Throws IoError on an invalid endpoint.
  void addPeer(PeerId peer, const std::string& endpoint);
  // Forgets `peer`: its connections close at once and frames still queued for it are dropped.
  void removePeer(PeerId peer);
  // Peers whose control connection broke (TCP reset or close, or TCP keepalive timeout) since the last call, each
  // once. A hint for the failure detector to probe at once, never a verdict: libzmq reconnects by itself.
  std::vector<PeerId> takeDisconnects();

  void send(PeerId to, Bytes header, engine::SharedBytes payload) override;
  bool receive(engine::RawFrame& out) override;
  // Blocks until a frame is waiting (true) or the timeout passes (false). Does not take the frame.
  bool waitReadable(std::chrono::milliseconds timeout);
  // The membership inbox ("Two inboxes" above): one consumer thread, which may differ from receive()'s.
  bool receiveMembership(engine::RawFrame& out);
  bool waitMembership(std::chrono::milliseconds timeout);

  ZmqStats stats() const;

 private:
  struct Impl;
  PeerId self_;
  std::string endpoint_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip::peer
