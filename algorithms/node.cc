#include "algorithms/node.h"

#include "algorithms/prox.h"
#include "core/error.h"

namespace gossip::algo {

Node::Node(PeerId id, std::unique_ptr<Algorithm> algorithm, std::unique_ptr<training::GradientEstimator> estimator,
           NodeSchedule schedule)
    : id_(id), algo_(std::move(algorithm)), est_(std::move(estimator)), sched_(std::move(schedule)) {
  GOSSIP_CHECK(algo_ && est_);
}

double Node::gradient() {
  ++gradCalls_;
  return est_->estimate(algo_->x(), g_);
}

void Node::beginRound(Round t, compress::Encoded& out) {
  const double lr = sched_.lr(t);
  double lossSum = 0.0;
  unsigned calls = 0;
  if (algo_->needsStartStep()) {
    lossSum += gradient();
    ++calls;
    algo_->startStep(g_, lr);
  }
  const unsigned steps = std::max(1u, sched_.localSteps(t));
  for (unsigned s = 1; s < steps; ++s) {
    lossSum += gradient();
    ++calls;
    algo_->x() -= lr * g_;
    proxL1(algo_->x(), lr * sched_.l1);
  }
  lossSum += gradient();
  ++calls;
  lastLoss_ = lossSum / calls;
  algo_->prepare(t, g_, lr, out);
}

void Node::endRound(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  algo_->apply(t, msgs, row);
}

}  // namespace gossip::algo
