#pragma once
// In-memory supervised data set. Features are float (Fashion-MNIST in double would be 376 MB), one row
// per sample, row-major so a minibatch is a set of contiguous rows. Labels are class indices for
// classification (0..classes-1) and {0,1} for binary logistic regression.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "core/real.h"

namespace gossip::training {

// The state vector (core/real.h: float32 unless the build says float64). Vec64 is for what is always double:
// the synthetic data generator, the smoothness bound and the tests' oracles.
using Vec = Eigen::Matrix<Real, Eigen::Dynamic, 1>;
using Vec64 = Eigen::VectorXd;
using Mat = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic>;

// Norms of state vectors accumulated in double: a float32 vector's own squaredNorm() overflows once its entries
// pass ~1.8e19, long before the values stop being finite (3.4e38), and its sum rounds at 2^-24.
template <class E>
double squaredNorm64(const Eigen::MatrixBase<E>& v) {
  return v.template cast<double>().squaredNorm();
}
template <class E>
double norm64(const Eigen::MatrixBase<E>& v) {
  return std::sqrt(squaredNorm64(v));
}
using FeatureMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Dataset {
  FeatureMatrix X;                  // samples x features
  std::vector<std::int32_t> y;      // one label per sample
  int classes = 0;                  // number of distinct labels (2 for binary)
  // Real-valued targets for regression (least squares). Empty for classification; for a regression
  // data set `y` is empty, `classes` is 0 and targets.size() == samples().
  std::vector<double> targets;

  std::size_t samples() const { return static_cast<std::size_t>(X.rows()); }
  std::size_t features() const { return static_cast<std::size_t>(X.cols()); }
};

// The first `count` rows of src (all of them when it has fewer), for evaluations of bounded cost.
inline Dataset headOf(const Dataset& src, std::size_t count) {
  count = std::min(count, src.samples());
  Dataset d;
  d.X = src.X.topRows(static_cast<Eigen::Index>(count));
  if (!src.y.empty()) d.y.assign(src.y.begin(), src.y.begin() + static_cast<std::ptrdiff_t>(count));
  if (!src.targets.empty()) d.targets.assign(src.targets.begin(), src.targets.begin() + static_cast<std::ptrdiff_t>(count));
  d.classes = src.classes;
  return d;
}

}  // namespace gossip::training
