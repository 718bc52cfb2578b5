// The receive-buffer pool (buffer_pool.h): copies received parts into recycled buffers. Thread-safe.
#include "transport/zmq/buffer_pool.h"

#include <cstring>

namespace gossip::peer::detail {

engine::SharedBytes BufferPool::copy(const zmq::message_t* parts, std::size_t count, std::size_t n) {
  std::unique_ptr<Bytes> b;
  if (n >= kMinPooled) {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      b = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!b) b = std::make_unique<Bytes>();
  b->resize(n);  // a recycled buffer of similar capacity does not reallocate (nor fault)
  std::size_t off = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (parts[k].size() != 0) std::memcpy(b->data() + off, parts[k].data(), parts[k].size());
    off += parts[k].size();
  }
  return engine::SharedBytes(b.release(), [pool = shared_from_this()](const Bytes* x) { pool->give(const_cast<Bytes*>(x)); });
}

void BufferPool::give(Bytes* x) {
  std::unique_ptr<Bytes> b(x);
  if (b->capacity() < kMinPooled) return;
  std::lock_guard lock(mutex_);
  if (free_.size() < keep_) free_.push_back(std::move(b));
}

}  // namespace gossip::peer::detail
