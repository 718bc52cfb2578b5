#pragma once
// Background: where the node sends work that must not hold up its rounds (checkpoint writes with their
// fsyncs, periodic test-set evaluations). Two implementations:
//   ThreadBackground  one worker thread, tasks in the order posted: the daemon's. One worker is enough
//                     (checkpoints and evaluations are rare next to rounds) and keeps the order simple: a
//                     checkpoint posted before another is written before it.
//   InlineBackground  runs each task inside post(), on the caller's thread: for tests that step a node on
//                     one thread, and for code paths that want today's synchronous behaviour.
// Injected into the pieces that use it (checkpoint_store.h, evaluation.h), so they never start threads
// themselves.
//
// Threading: post() and drain() may be called from any thread but a task's own (a task that drains its
// own executor would wait for itself). Tasks must not throw: a task owns its errors and hands them back
// to the node thread itself (the checkpoint writer keeps an exception_ptr); ThreadBackground terminates
// the process on an escaped exception rather than lose it silently.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace gossip::daemon {

class Background {
 public:
  virtual ~Background() = default;
  virtual void post(std::function<void()> task) = 0;
  // Returns once every task posted before the call has finished.
  virtual void drain() = 0;
};

class InlineBackground final : public Background {
 public:
  void post(std::function<void()> task) override { task(); }
  void drain() override {}
};

class ThreadBackground final : public Background {
 public:
  ThreadBackground();
  ~ThreadBackground() override;  // drains, then joins the worker
  ThreadBackground(const ThreadBackground&) = delete;
  ThreadBackground& operator=(const ThreadBackground&) = delete;

  void post(std::function<void()> task) override;
  void drain() override;

 private:
  void work();

  std::mutex mutex_;              // guards queue_, busy_, stopping_
  std::condition_variable wake_;  // the worker: a task was posted, or stop
  std::condition_variable idle_;  // drain(): the queue ran empty with no task running
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;  // last: started once the fields above exist
};

// At most one job of a kind waiting beside the one running: a newer job replaces a queued older one. Both
// users produce snapshots where only the newest matters (a checkpoint, a model to evaluate), and each
// snapshot holds a copy of the model: without this a slow disk or a slow evaluation would queue one copy
// per round and grow without bound.
//
// Threading: submit() from one thread (the node's); `run` on the Background's. The queued job is guarded
// by mutex_. The Background must be drained before this object goes (its tasks point to it).
template <class Job>
class LatestOnly {
 public:
  LatestOnly(Background& background, std::function<void(Job&)> run) : background_(background), run_(std::move(run)) {}
  LatestOnly(const LatestOnly&) = delete;
  LatestOnly& operator=(const LatestOnly&) = delete;

  // Returns true when `job` replaced an older one that had not started.
  bool submit(Job job) {
    std::unique_lock lock(mutex_);
    const bool replaced = queued_.has_value();
    queued_ = std::move(job);
    lock.unlock();
    // A task posted earlier that has not run yet takes the newest job: one task per empty-to-full change.
    if (!replaced) background_.post([this] { runQueued(); });
    return replaced;
  }

 private:
  void runQueued() {
    std::optional<Job> job;
    {
      std::lock_guard lock(mutex_);
      job.swap(queued_);
    }
    if (job) run_(*job);
  }

  Background& background_;
  std::function<void(Job&)> run_;
  std::mutex mutex_;
  std::optional<Job> queued_;
};

}  // namespace gossip::daemon
