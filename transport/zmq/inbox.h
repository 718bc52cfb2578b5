#pragma once
// Inboxes: received frames waiting for their consumers, in two inboxes. Membership frames (header kind, read
// with engine/frame.h's peekKindByte) go to an inbox of their own, read by the membership thread
// (daemon/node/membership_runner.h); every other frame goes to the frame inbox, read by the node thread. So
// probes and acks are taken within milliseconds while the node thread computes for seconds and its inbox
// fills (issue 27: a 20M-parameter model's rounds held the one loop long enough for healthy nodes to be
// declared dead). Each inbox has its own mutex, condition and bound, so the membership thread never waits
// for the node thread's inbox or is woken by its frames.
//
// Bounds: a frame read while its inbox is full is dropped and counted, never left in libzmq (never letting
// libzmq stop reading a connection avoids a libzmq 4.3.4 abort; see bindListener() in sockets.cc). Control
// frames (acks, edge agreement) have room for as many again as the frame inbox's limit, so a flood of model
// frames cannot starve them. Replica methods resend what was dropped; stateless ones mix it as missing.
//
// Copies: a payload of kLargePayloadBytes (1 MiB) or more stays in libzmq's parts: copying a 200 MB model
// frame on the I/O thread held it for a second on a loaded machine, and every probe, ack and refutation in or
// out of the node waited behind it (issue 27). A model frame's parts are then handed to the engine as they
// are (engine::PayloadParts: no copy at all, and no receive buffer of the model's size besides libzmq's, issue
// 29); any other frame's are copied by pop(), on the consumer's thread, into a buffer of its own, since its
// reader wants one buffer. Those are rare (an edge set-up's public state, once per edge life), so their
// buffers are not recycled: the pool of received buffers kept before paid off while every model frame was
// copied, and would now hold an idle 400 MB edge set-up buffer per neighbour of a 100M-parameter LEAD node
// for the whole run, since no model frame takes it back.
//
// Threading: deliver() on the I/O thread (the only producer); pop() and waitFrames() on the node thread,
// popMembership() and waitMembership() on the membership thread; wakeAll() on the I/O thread when it fails.
// The counters are atomics, read by stats() from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include <zmq.hpp>

#include "engine/transport.h"
#include "transport/zmq/zmq_transport.h"

namespace gossip::peer::detail {

class Inboxes {
 public:
  static constexpr std::size_t kLargePayloadBytes = std::size_t{1} << 20;  // left in libzmq's parts from here up
  // A frame of another kind than Model this large is followed by a malloc_trim once its parts are freed
  // (releaseFreedMemory in inbox.cc: an edge set-up frame of a large model).
  static constexpr std::size_t kTrimAfterBytes = std::size_t{16} << 20;
  explicit Inboxes(const ZmqOptions& opt) : opt_(opt) {}

  // I/O thread: a received message's parts [routing id, header, payload parts...], well formed (multipart.h)
  // and from the sender its header names. Large payload parts are moved out of `parts`.
  void deliver(std::vector<zmq::message_t>& parts);

  // Node thread: takes the next frame (false if none), copying a large payload out of its parts.
  bool pop(engine::RawFrame& out);
  // Node thread: waits until a frame is waiting (true), `failed` is set or the timeout passes.
  bool waitFrames(std::chrono::milliseconds timeout, const std::atomic<bool>& failed);

  // Membership thread: the same for the membership inbox.
  bool popMembership(engine::RawFrame& out);
  bool waitMembership(std::chrono::milliseconds timeout, const std::atomic<bool>& failed);

  // Wakes every waiter (the I/O thread failed and set the flag they wait on).
  void wakeAll();

  std::uint64_t framesReceived() const { return framesReceived_.load(); }
  std::uint64_t bytesReceived() const { return bytesReceived_.load(); }
  std::uint64_t dropped() const { return dropped_.load(); }
  std::uint64_t membershipDropped() const { return membershipDropped_.load(); }

 private:
  static void releaseFreedMemory();
  // A frame in the frame inbox: its payload already set when small, else still in libzmq's parts.
  struct Incoming {
    engine::RawFrame frame;
    std::vector<zmq::message_t> parts;  // payload parts not copied yet
    std::size_t bytes = 0;              // payload bytes
    bool model = false;                 // a model frame: its parts go to the engine uncopied
  };

  void toMembership(const std::vector<zmq::message_t>& parts);
  bool full() const { return frames_.size() >= opt_.inbox_max_frames || frameBytes_ >= opt_.inbox_max_bytes; }

  const ZmqOptions& opt_;

  std::mutex framesMutex_;
  std::condition_variable framesCv_;
  std::deque<Incoming> frames_;
  std::uint64_t frameBytes_ = 0;  // payload bytes in frames_

  std::mutex memberMutex_;
  std::condition_variable memberCv_;
  std::deque<engine::RawFrame> member_;

  std::atomic<std::uint64_t> framesReceived_{0}, bytesReceived_{0}, dropped_{0}, membershipDropped_{0};
};

}  // namespace gossip::peer::detail
