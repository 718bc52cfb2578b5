#pragma once
// A model is a loss over one flat double parameter vector with an analytic gradient. Models hold no
// parameters themselves (the algorithm owns x), so one Model instance serves every virtual node.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "training/dataset.h"

namespace gossip::training {

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual std::size_t dim() const = 0;
  // Initial parameters (deterministic given rng).
  virtual void init(Vec& x, Rng& rng) const = 0;
  // Mean smooth loss over `rows` of data (including the L2 term), and its gradient into grad (resized).
  virtual double lossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                             Vec& grad) const = 0;
  // Codistillation (algorithms/codistill.h): the mean over rows of CE(y, p(x)) + weight * KL(q || p(x)), with
  // p(x) this model's class probabilities and q the mean of the teachers' class probabilities on the same
  // rows, plus the L2 term; and its gradient in x (the teachers are constants). With no teachers or weight 0
  // it is lossAndGrad. Only classifiers with a softmax output implement it.
  virtual double distillLossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                                    std::span<const Vec* const> teachers, double weight, Vec& grad) const {
    if (teachers.empty() || weight == 0.0) return lossAndGrad(x, data, rows, grad);
    throw ConfigError("model " + name() + " cannot be codistilled: it needs a softmax output (model.kind = softmax or mlp)");
  }
  // Codistillation's reference variant (algorithms/codistill_reference.h), on the rows of a reference set all
  // nodes hold. predictProbs: this model's class probabilities on every row of ref, row-major (rows x
  // classes) into probs (resized). addReferenceTerm: adds to grad the gradient of weight * mean_r KL(q_r ||
  // p_r(x)) over ref's rows, q row-major like probs (constants), and returns that term. Labels of ref are
  // not used. Only classifiers with a softmax output implement them.
  virtual void predictProbs(const Vec& /*x*/, const Dataset& /*ref*/, std::vector<double>& /*probs*/) const {
    throw ConfigError("model " + name() + " cannot be codistilled: it needs a softmax output (model.kind = softmax or mlp)");
  }
  virtual double addReferenceTerm(const Vec& /*x*/, const Dataset& /*ref*/, std::span<const double> /*q*/,
                                  double /*weight*/, Vec& /*grad*/) const {
    throw ConfigError("model " + name() + " cannot be codistilled: it needs a softmax output (model.kind = softmax or mlp)");
  }
  // Mean smooth loss over all of data.
  virtual double loss(const Vec& x, const Dataset& data) const = 0;
  // Fraction of correctly classified samples.
  virtual double accuracy(const Vec& x, const Dataset& data) const = 0;
  // The non-smooth part R(x) = l1 * ||x||_1 handled by proximal steps (0 if none).
  virtual double l1() const { return 0.0; }
  // The coefficient of l2/2 ||x||^2 that lossAndGrad includes (0 if none).
  virtual double l2() const { return 0.0; }
};

}  // namespace gossip::training
