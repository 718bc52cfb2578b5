#pragma once
// Gradient estimators over one node's local data: minibatch SGD, full gradient, LSVRG, SAGA.
// One estimator per node; it owns that node's sampling RNG and variance-reduction memory.
#include <cstdint>
#include <memory>

#include "training/model.h"

namespace gossip::training {

class GradientEstimator {
 public:
  virtual ~GradientEstimator() = default;
  // Writes an estimate of grad f_i(x) into g (resized) and returns the sampled loss.
  virtual double estimate(const Vec& x, Vec& g) = 0;
  // Drops variance-reduction memory (after a warm restart or a model transfer).
  virtual void reset() {}
  // Per-sample gradients evaluated so far (full passes included): the work measure for "epochs".
  virtual std::uint64_t sampleGradients() const { return 0; }
};

}  // namespace gossip::training
