#pragma once
// Linear models: binary logistic regression and least squares. Their per-sample loss depends on x only
// through one margin z_j = <w, a_j> + b, so the gradient of sample j is l'(z_j) [a_j; 1] + l2 x. That
// structure is exposed (LinearModel) so that SAGA can store one scalar per sample instead of a full
// gradient (ALGORITHMS.md §4.6), and so the reference solver can reuse it.
//
// Parameter layout: x = [w (features); b] when the model has a bias, else x = w. The l2 term covers
// the whole vector including b (the decentralized problem is defined on the flat x, and so is the prox
// of R = l1 ||x||_1). init() gives zeros: the problems are convex, so no symmetry needs breaking.
#include <cstdint>
#include <span>

#include "training/batch_rows.h"
#include "training/model.h"

namespace gossip::training {

class LinearModel : public Model {
 public:
  LinearModel(std::size_t features, bool bias, double l1, double l2);

  std::size_t dim() const override { return features_ + (bias_ ? 1 : 0); }
  void init(Vec& x, Rng& rng) const override;
  double lossAndGrad(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                     Vec& grad) const override;
  double loss(const Vec& x, const Dataset& data) const override;
  double l1() const override { return l1_; }
  double l2() const override { return l2_; }

  std::size_t features() const { return features_; }
  bool hasBias() const { return bias_; }

  // deriv[k] = l'(z) at sample rows[k] (resized to rows.size()). Returns the mean data loss over rows,
  // WITHOUT the l2 term.
  double marginDerivatives(const Vec& x, const Dataset& data, std::span<const std::uint32_t> rows,
                           Vec& deriv) const;
  // acc += scale * sum_k coef[k] * [a_{rows[k]}; 1]   (acc must already have size dim()).
  void addFeatureCombination(const Dataset& data, std::span<const std::uint32_t> rows, const Vec& coef,
                             double scale, Vec& acc) const;

 protected:
  // Overwrites the margins z (one per row of the chunk rows[begin, begin+z.size())) with l'(z) and
  // returns the summed loss. One virtual call per chunk, not per sample.
  virtual double chunkLossDeriv(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                                Eigen::Ref<Vec> z) const = 0;
  // Summed loss over a chunk without derivatives.
  virtual double chunkLoss(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                           Eigen::Ref<const Vec> z) const = 0;
  // True when the loss reads Dataset::targets, false when it reads the labels y.
  virtual bool usesTargets() const = 0;
  // Margins for a gathered chunk into `slot`.
  detail::VecMap margins(const Vec& x, const detail::MatMap& a, int slot) const;
  void checkShape(const Vec& x, const Dataset& data) const;

 private:
  double sumLoss(const Vec& x, const Dataset& data, const detail::RowSet& rows, Vec* grad) const;

  std::size_t features_;
  bool bias_;
  double l1_, l2_;
};

// Labels y in {0,1}: l(z) = log(1 + e^z) - y z, evaluated stably. Accuracy: predict 1 iff z > 0.
class LogisticModel final : public LinearModel {
 public:
  using LinearModel::LinearModel;
  std::string name() const override { return "logistic"; }
  double accuracy(const Vec& x, const Dataset& data) const override;

 protected:
  bool usesTargets() const override { return false; }
  double chunkLossDeriv(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                        Eigen::Ref<Vec> z) const override;
  double chunkLoss(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                   Eigen::Ref<const Vec> z) const override;
};

// Regression on Dataset::targets: l(z) = (z - t)^2 / 2 (ridge when l2 > 0). It is not a classifier:
// accuracy() returns NaN, which callers must treat as "not applicable".
class LeastSquaresModel final : public LinearModel {
 public:
  using LinearModel::LinearModel;
  std::string name() const override { return "least_squares"; }
  double accuracy(const Vec& x, const Dataset& data) const override;

 protected:
  bool usesTargets() const override { return true; }
  double chunkLossDeriv(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                        Eigen::Ref<Vec> z) const override;
  double chunkLoss(const Dataset& data, const detail::RowSet& rows, std::size_t begin,
                   Eigen::Ref<const Vec> z) const override;
};

}  // namespace gossip::training
