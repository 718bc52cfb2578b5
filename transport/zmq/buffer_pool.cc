// The receive-buffer pool (buffer_pool.h): copies received parts into recycled buffers. Thread-safe.
#include "transport/zmq/buffer_pool.h"

#include <cstring>

namespace gossip::peer::detail {

engine::SharedBytes BufferPool::copy(const zmq::message_t* parts, std::size_t count, std::size_t n) {
  std::unique_ptr<Bytes> b;
  std::vector<std::unique_ptr<Bytes>> freed;  // released after the lock
  if (n >= kMinPooled) {
    std::lock_guard lock(mutex_);
    std::size_t best = free_.size();
    for (std::size_t i = 0; i < free_.size(); ++i) {
      const std::size_t cap = free_[i].buffer->capacity();
      if (cap >= n && cap / 2 <= n && (best == free_.size() || cap < free_[best].buffer->capacity())) best = i;
    }
    if (best < free_.size()) {
      b = std::move(free_[best].buffer);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    }
    for (auto it = free_.begin(); it != free_.end();) {
      if (++it->passedOver > kMaxPassedOver) {
        freed.push_back(std::move(it->buffer));
        it = free_.erase(it);
      } else {
        ++it;
      }
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
  if (free_.size() < keep_) free_.push_back({std::move(b), 0});
}  // a buffer the pool has no room for is freed here, after the lock

std::size_t BufferPool::idleBuffers() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

std::size_t BufferPool::idleBytes() const {
  std::lock_guard lock(mutex_);
  std::size_t total = 0;
  for (const auto& i : free_) total += i.buffer->capacity();
  return total;
}

}  // namespace gossip::peer::detail
