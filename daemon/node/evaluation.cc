#include "daemon/node/evaluation.h"

#include <utility>

namespace gossip::daemon {

PeriodicEvaluation::PeriodicEvaluation(const training::Model& model, const training::Dataset& set,
                                       Background& background)
    : model_(model), set_(set), queue_(background, [this](Job& job) { evaluate(job); }) {}

void PeriodicEvaluation::submit(Round round, training::Vec x) { queue_.submit(Job{round, std::move(x)}); }

std::optional<PeriodicEvaluation::Result> PeriodicEvaluation::take() {
  std::lock_guard lock(mutex_);
  if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  return std::exchange(done_, std::nullopt);
}

void PeriodicEvaluation::evaluate(Job& job) {
  Result r{job.round, 0.0, set_.samples()};
  try {
    r.accuracy = model_.accuracy(job.x, set_);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::current_exception();
    return;
  }
  std::lock_guard lock(mutex_);
  // One worker runs jobs in order, so a finished result is never older than the one it replaces; the
  // check keeps that true should the Background ever have more workers.
  if (!done_ || done_->round <= r.round) done_ = r;
}

}  // namespace gossip::daemon
