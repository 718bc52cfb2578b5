#pragma once
// PayloadPool: the buffers a node's outgoing model frames are sent in, reused across rounds.
//
// A round's payload is shared by every link (encode once) and may outlive the round: a zero-copy ZeroMQ
// send holds it until libzmq's I/O thread has written it, linked mode until the peer acked it, an
// in-process receiver until it decoded it. A buffer may be written again only after the last of those
// holders let go. Asking `shared_ptr::use_count() == 1` does not prove that: the standard calls the count
// approximate across threads, and nothing orders libzmq's last read before our next write. So ownership
// goes the other way: the buffer's deleter hands it back here, and the standard orders a shared_ptr's
// deleter after every other owner's release. `take` (the engine's thread) and the deleter (whichever thread
// drops the last reference) meet under a mutex, which orders the old reads before the new writes.
//
// Threading: take() on the owner's thread; buffers return from any thread. The pool lives as long as any
// buffer it issued (the deleter holds a shared_ptr to it), so an engine may be destroyed with frames in flight.
#include <memory>
#include <mutex>
#include <vector>

#include "core/bytes.h"

namespace gossip::engine {

class PayloadPool : public std::enable_shared_from_this<PayloadPool> {
 public:
  // At most `keep` returned buffers are kept (a steady state needs two or three: this round's, last
  // round's still in flight, and one back in the pool); more are freed.
  static std::shared_ptr<PayloadPool> create(std::size_t keep = 4) {
    return std::shared_ptr<PayloadPool>(new PayloadPool(keep));
  }

  // A buffer no one else holds: a returned one (its capacity kept, contents unspecified) or a new one.
  std::shared_ptr<Bytes> take() {
    std::unique_ptr<Bytes> b;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        b = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!b) b = std::make_unique<Bytes>();
    return std::shared_ptr<Bytes>(b.release(), Return{shared_from_this()});
  }

  std::size_t pooled() const {
    std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  explicit PayloadPool(std::size_t keep) : keep_(keep) {}

  struct Return {
    std::shared_ptr<PayloadPool> pool;
    void operator()(Bytes* b) const {
      std::unique_ptr<Bytes> owned(b);
      std::lock_guard lock(pool->mutex_);
      if (pool->free_.size() < pool->keep_) pool->free_.push_back(std::move(owned));
    }
  };

  const std::size_t keep_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Bytes>> free_;
};

}  // namespace gossip::engine
