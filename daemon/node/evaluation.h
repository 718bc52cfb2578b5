#pragma once
// The periodic test-set evaluation (monitor.eval_every) off the node thread: the node thread hands over a
// copy of x with the round it belongs to, a Background (background.h) computes the accuracy, and the node
// thread picks the result up on a later pass of its loop (take()). Like checkpoints, at most one model
// waits beside the one being evaluated; a newer one replaces a waiting older one. The last round's
// evaluation on the whole test set stays on the node thread (the node is finishing; nothing waits on it).
//
// Threading: submit() and take() on the node thread; the evaluation on the Background's worker. The
// model and data set are read-only there (training::Model keeps its scratch per thread). The finished
// result is the only field both touch, behind mutex_. The Background must be drained before this goes.
// An evaluation that throws (out of memory, a model's error) is kept and rethrown by the next take() on
// the node thread, which ends the run with that error, as a failed checkpoint write does; on the worker
// it would have ended the process (background.h).
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>

#include "core/types.h"
#include "daemon/node/background.h"
#include "training/model.h"

namespace gossip::daemon {

class PeriodicEvaluation {
 public:
  PeriodicEvaluation(const training::Model& model, const training::Dataset& set, Background& background);

  void submit(Round round, training::Vec x);

  struct Result {
    Round round = 0;  // the round whose model was evaluated (x after `round` rounds)
    double accuracy = 0;
    std::size_t samples = 0;
  };
  // The newest finished result not taken yet; rethrows an evaluation's exception.
  std::optional<Result> take();

 private:
  struct Job {
    Round round;
    training::Vec x;
  };
  void evaluate(Job& job);

  const training::Model& model_;
  const training::Dataset& set_;
  std::mutex mutex_;  // guards done_ and failure_
  std::optional<Result> done_;
  std::exception_ptr failure_;
  LatestOnly<Job> queue_;  // last: its tasks use the fields above
};

}  // namespace gossip::daemon
