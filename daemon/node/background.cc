#include "daemon/node/background.h"

#include <utility>

namespace gossip::daemon {

ThreadBackground::ThreadBackground() : worker_([this] { work(); }) {}

ThreadBackground::~ThreadBackground() {
  drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void ThreadBackground::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadBackground::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void ThreadBackground::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left (the destructor drained first)
    auto task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();  // noexcept by contract: an escaped exception ends the process (std::terminate via the thread)
    task = nullptr;  // whatever it captured goes before drain() can return
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace gossip::daemon
