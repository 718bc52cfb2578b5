#pragma once
// BufferPool: the buffers received payloads are copied into, recycled. The engine's RawFrame holds a Bytes
// (a std::vector), so a received payload is copied once out of libzmq's parts, unless it is a model frame
// of kMinPooled or more, which the engine takes in its parts (inbox.h; engine/transport.h, PayloadParts). A fresh multi-megabyte
// vector costs a page fault per 4 KiB (measured: ~20% of loopback throughput for 64 MB frames), so large
// buffers come back here when the engine drops its last reference, and the next frame of similar size is
// copied into one without faulting.
//
// Which buffer a payload gets: the smallest idle one that holds it and is at most twice its size; else a
// new one. An idle buffer passed over by 16 pooled copies is freed. Before, any idle buffer was taken and
// kept its capacity: one 80 MB edge set-up payload (CHOCO's x̂, LEAD's h) then stayed in the pool, or
// carried the next 1.6 MB top-k message, for the rest of the run (4 bytes per parameter held for nothing).
//
// Threading: copy() runs on the I/O thread (small payloads) or on receive()'s caller (large ones); a buffer
// comes back from whichever thread drops the last reference to it. One mutex guards the free list; freed
// buffers are released outside it. The pool is held by shared_ptr: payloads handed out hold it too, since
// they may outlive the transport.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <zmq.hpp>

#include "core/bytes.h"
#include "engine/transport.h"

namespace gossip::peer::detail {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr std::size_t kMinPooled = std::size_t{1} << 20;  // smaller ones: malloc is cheap enough
  // Keeps at most `keep` idle buffers (ZmqOptions::recycled_buffers); each holds its capacity.
  explicit BufferPool(std::size_t keep) : keep_(keep) {}

  static constexpr unsigned kMaxPassedOver = 16;
  // One buffer holding the `count` parts' bytes one after the other, `n` bytes in all.
  engine::SharedBytes copy(const zmq::message_t* parts, std::size_t count, std::size_t n);

  std::size_t idleBuffers() const;  // for tests
  std::size_t idleBytes() const;    // capacity of the idle buffers, for tests

 private:
  struct Idle {
    std::unique_ptr<Bytes> buffer;
    unsigned passedOver = 0;  // pooled copies since it came back that did not take it
  };
  void give(Bytes* x);  // the payload's deleter: keeps a large buffer if there is room
  std::size_t keep_;
  mutable std::mutex mutex_;
  std::vector<Idle> free_;
};

}  // namespace gossip::peer::detail
