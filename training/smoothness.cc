#include "training/smoothness.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

namespace gossip::training {

namespace {

std::optional<double> curvature(const Model& m) {
  const std::string k = m.name();
  if (k == "logistic") return 0.25;
  if (k == "least_squares") return 1.0;
  if (k == "softmax") return 0.5;
  return std::nullopt;
}

// lambda_max of (1/m) sum_j a~_j a~_j^T by power iteration, v <- A~^T (A~ v) / m, in blocks of rows so
// that no copy of the shard is made.
double gramLargestEigenvalue(const Dataset& data, std::span<const std::uint32_t> rows) {
  const auto f = static_cast<Eigen::Index>(data.features());
  const double m = static_cast<double>(rows.size());
  Vec64 v = Vec64::Constant(f + 1, 1.0 / std::sqrt(static_cast<double>(f + 1)));
  Vec64 next(f + 1);
  double lambda = 0.0;
  for (int it = 0; it < 1000; ++it) {
    next.setZero();
    for (const std::uint32_t r : rows) {
      const auto a = data.X.row(r).cast<double>();
      const double z = a.dot(v.head(f)) + v[f];
      next.head(f) += z * a.transpose();
      next[f] += z;
    }
    next /= m;
    const double rayleigh = v.dot(next);  // v has unit norm
    const double norm = next.norm();
    if (norm == 0.0) return 0.0;
    v = next / norm;
    const bool settled = it > 0 && std::abs(rayleigh - lambda) <= 1e-9 * rayleigh;
    lambda = rayleigh;
    if (settled) break;
  }
  return lambda;
}

}  // namespace

std::optional<Smoothness> smoothness(const Model& model, const Dataset& data, std::span<const std::uint32_t> rows) {
  const auto c = curvature(model);
  if (!c) return std::nullopt;
  Smoothness s;
  double maxRow = 0.0;
  for (const std::uint32_t r : rows) maxRow = std::max(maxRow, static_cast<double>(data.X.row(r).cast<double>().squaredNorm()) + 1.0);
  s.sample = *c * maxRow + model.l2();
  s.full = (rows.empty() ? 0.0 : *c * gramLargestEigenvalue(data, rows)) + model.l2();
  return s;
}

double autoStep(const Smoothness& agreed, const std::string& estimator) {
  if (estimator == "full") return 1.0 / agreed.full;
  return 1.0 / (3.0 * agreed.sample);
}

const char* autoStepRule(const std::string& estimator) { return estimator == "full" ? "1/L" : "1/(3 L per sample)"; }

Smoothness largest(const Smoothness& a, const Smoothness& b) {
  return {std::max(a.full, b.full), std::max(a.sample, b.sample)};
}

}  // namespace gossip::training
