#pragma once
// Gradient estimators over one node's local data: minibatch SGD, full gradient, LSVRG, SAGA.
// One estimator per node; it owns that node's sampling RNG and variance-reduction memory.
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
};

}  // namespace gossip::training
