#pragma once
// Small deterministic convex problems with known centralized solutions, used as test oracles for the
// exact methods. Each node i holds f_i; the network objective is (1/n) sum_i f_i (+ l1 ||x||_1).
#include <cmath>
#include <memory>
#include <vector>

#include <Eigen/Dense>

#include "core/rng.h"
#include "training/estimator.h"

namespace gossip::testing {

// Vec is the algorithms' state (Real: float32 unless the build is float64, core/real.h); the problems and their
// centralized solutions are double (Vec64, Mat64): the oracle keeps its precision whatever the state's is.
using Vec = training::Vec;
using Vec64 = training::Vec64;
using Mat64 = Eigen::MatrixXd;

struct NodeData {
  Mat64 A;  // m x d
  Vec64 b;  // m (targets or {0,1} labels)
};

enum class Loss { Ridge, Logistic };

struct Problem {
  Loss loss = Loss::Ridge;
  std::vector<NodeData> nodes;
  double l2 = 0.0;
  double l1 = 0.0;
  std::size_t dim() const { return static_cast<std::size_t>(nodes.front().A.cols()); }

  // Mean loss of node i (smooth part) and its full gradient.
  double lossGrad(std::size_t i, const Vec64& x, Vec64& g) const {
    const auto& nd = nodes[i];
    const double m = static_cast<double>(nd.A.rows());
    Vec64 z = nd.A * x;
    double f = 0.0;
    Vec64 r(z.size());
    for (Eigen::Index k = 0; k < z.size(); ++k) {
      if (loss == Loss::Ridge) {
        const double e = z[k] - nd.b[k];
        f += 0.5 * e * e;
        r[k] = e;
      } else {
        const double p = 1.0 / (1.0 + std::exp(-z[k]));
        f += std::log1p(std::exp(-std::abs(z[k]))) + std::max(z[k], 0.0) - nd.b[k] * z[k];
        r[k] = p - nd.b[k];
      }
    }
    g = nd.A.transpose() * r / m + l2 * x;
    return f / m + 0.5 * l2 * x.squaredNorm();
  }

  Vec64 meanGrad(const Vec64& x) const {
    Vec64 g, acc = Vec64::Zero(static_cast<Eigen::Index>(dim()));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      lossGrad(i, x, g);
      acc += g;
    }
    return acc / static_cast<double>(nodes.size());
  }

  // Centralized solution over the nodes in `members` (all if empty): exact solve for ridge without l1,
  // otherwise proximal gradient run to a fixed point.
  Vec64 solve(const std::vector<std::size_t>& members = {}) const;
  double smoothness() const;  // an upper bound on max_i L_i
};

// Heterogeneous ridge least squares (ALGORITHMS.md §8 algorithm table): node i draws features around its
// own mean and targets from its own weight vector.
Problem makeRidge(std::size_t n, std::size_t d, std::size_t m, double l2, std::uint64_t seed);
// Heterogeneous L1 logistic regression (ALGORITHMS.md §8 L1-logistic table).
Problem makeL1Logistic(std::size_t n, std::size_t d, std::size_t m, double l1, double l2, std::uint64_t seed);

// Full-gradient estimator for node i of a Problem.
class FullGradient final : public training::GradientEstimator {
 public:
  FullGradient(const Problem& p, std::size_t i) : p_(p), i_(i) {}
  // The node's state is Real (core/real.h); the problem is evaluated in double, the oracle's precision.
  double estimate(const Vec& x, Vec& g) override {
    x64_ = x.cast<double>();
    const double f = p_.lossGrad(i_, x64_, g64_);
    g = g64_.cast<Real>();
    return f;
  }
  // Stateless: nothing to checkpoint.
  void saveState(ByteWriter&) const override {}
  void loadState(ByteReader&) override {}

 private:
  const Problem& p_;
  std::size_t i_;
  Vec64 x64_, g64_;
};

}  // namespace gossip::testing
