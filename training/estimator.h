#pragma once
// Gradient estimators over one node's local data: minibatch SGD, full gradient, LSVRG, SAGA.
// One estimator per node; it owns that node's sampling RNG and variance-reduction memory.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/bytes.h"
#include "core/error.h"
#include "training/model.h"

namespace gossip::training {

class GradientEstimator {
 public:
  virtual ~GradientEstimator() = default;
  // Writes an estimate of grad f_i(x) into g (resized) and returns the sampled loss.
  virtual double estimate(const Vec& x, Vec& g) = 0;
  // estimate() with codistillation's term (Model::distillLossAndGrad): the gradient of the sampled loss plus
  // weight * KL(teachers' mean prediction || this model's) on the same minibatch. Only minibatch SGD has it.
  virtual double estimateDistilled(const Vec& x, std::span<const Vec* const> teachers, double weight, Vec& g) {
    if (teachers.empty() || weight == 0.0) return estimate(x, g);
    throw ConfigError("codistillation needs estimator.kind = \"sgd\" (a minibatch of the node's own data)");
  }
  // Codistillation's reference variant (algorithms/codistill_reference.h), on the reference rows given in
  // EstimatorSpec::reference: estimate() plus weight * mean KL(q || p(x)) over those rows
  // (Model::addReferenceTerm), and the model's class probabilities on them. Only minibatch SGD has them.
  virtual double estimateWithReference(const Vec& x, std::span<const double> /*q*/, double weight, Vec& g) {
    if (weight == 0.0) return estimate(x, g);
    throw ConfigError("codistillation needs estimator.kind = \"sgd\" (a minibatch of the node's own data)");
  }
  virtual void predictReference(const Vec& /*x*/, std::vector<double>& /*probs*/) {
    throw ConfigError("codistillation with a reference set needs estimator.kind = \"sgd\"");
  }
  // If the next gradient is exactly zero (the trainer bridge's model mode), takes it without writing any
  // vector and returns its loss; nullopt otherwise (then call estimate). For callers that can use "zero"
  // without a vector of zeros (Algorithm::acceptsZeroGradient).
  virtual std::optional<double> takeZeroGradient() { return std::nullopt; }
  // The vector this estimator's gradients are written into, when it owns one (the trainer bridge's, where the
  // trainer's gradient is copied before Node asks for it): Node then passes it as its g to every estimate, and
  // a node keeps one gradient vector instead of the estimator's and its own (4 bytes per parameter). Valid for
  // the estimator's life; nullptr: Node keeps its own.
  virtual Vec* gradientStorage() { return nullptr; }
  // A gradient read where it lies instead of copied into a vector: the trainer bridge's, in the trainer's
  // shared memory when the trainer's dtype is the state's (gradient mode). If the next gradient is one, takes
  // it: returns where its d values are, valid and unchanged until the round's apply is over (the caller must
  // not read them later), and its loss. nullopt otherwise (then call estimate). Node reads it in place; every method takes its
  // gradient as a read-only view (algo::GradRef, algorithms/algorithm.h): no copy of d values per round.
  struct SharedGradient {
    const Real* data;
    double loss;
  };
  virtual std::optional<SharedGradient> takeSharedGradient() { return std::nullopt; }
  // Drops variance-reduction memory (after a warm restart or a model transfer).
  virtual void reset() {}
  // Per-sample gradients evaluated so far (full passes included): the work measure for "epochs".
  virtual std::uint64_t sampleGradients() const { return 0; }

  // Checkpoint state: everything that decides future estimates (RNG state, sampling cursor and
  // permutation, LSVRG reference point and its gradient, SAGA memory, work counter). Restoring it into an
  // estimator built with the same spec, model and rows continues bit-identically. loadState validates
  // every length against this estimator's dimensions and throws DecodeError on a mismatch, leaving the
  // estimator unchanged.
  // Every estimator in training/ overrides both; the defaults serve test doubles that are never saved.
  virtual void saveState(ByteWriter&) const { throw Error("this gradient estimator cannot be checkpointed"); }
  virtual void loadState(ByteReader&) { throw Error("this gradient estimator cannot be checkpointed"); }
};

}  // namespace gossip::training
