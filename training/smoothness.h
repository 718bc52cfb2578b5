#pragma once
// Smoothness constants of a node's objective, for a step size that needs no tuning (algorithm.lr_auto,
// docs/algorithms.md "Automatic step size").
//
// For the linear models every sample's loss is l(<a_j, x> + b) with l'' <= c: c = 1/4 (logistic), 1
// (least squares), 1/2 (softmax: the cross-entropy Hessian in the logits, diag(p) - pp^T, has largest
// eigenvalue at most 1/2). With a~_j = [a_j; 1] (the bias column; kept even for a model without a bias,
// which only makes the bound larger):
//   L_full   = c * lambda_max((1/m) sum_j a~_j a~_j^T) + l2     the node's whole local objective f_i
//   L_sample = c * max_j ||a~_j||^2 + l2                          any single sample, so any minibatch
// lambda_max comes from power iteration on the rows (no d x d matrix is formed). Its Rayleigh quotient is a
// lower bound that converges from below; the steps autoStep() takes keep a margin of 2 (gradient descent
// is stable up to 2/L) so the residual shortfall (stopping at 1e-9 relative change) does not matter.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "training/dataset.h"
#include "training/model.h"

namespace gossip::training {

struct Smoothness {
  double full = 0.0;
  double sample = 0.0;
  bool operator==(const Smoothness&) const = default;
};

// nullopt for models without such a bound (mlp). rows may be empty (then only l2 is left).
std::optional<Smoothness> smoothness(const Model& model, const Dataset& data, std::span<const std::uint32_t> rows);

// The step for the agreed (largest over the nodes) constants: 1/L_full with the full local gradient,
// 1/(3 L_sample) with a sampled one (sgd, lsvrg, saga; the SAGA and SVRG analyses' safe step).
double autoStep(const Smoothness& agreed, const std::string& estimator);
// The rule autoStep applies for `estimator`, as text ("1/L" or "1/(3 L per sample)").
const char* autoStepRule(const std::string& estimator);

// The largest of both constants over nodes.
Smoothness largest(const Smoothness& a, const Smoothness& b);

}  // namespace gossip::training
