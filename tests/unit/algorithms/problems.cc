#include "problems.h"

#include <algorithm>

namespace gossip::testing {
namespace {

double softThreshold(double v, double t) { return v > t ? v - t : (v < -t ? v + t : 0.0); }

}  // namespace

Problem makeRidge(std::size_t n, std::size_t d, std::size_t m, double l2, std::uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.loss = Loss::Ridge;
  p.l2 = l2;
  for (std::size_t i = 0; i < n; ++i) {
    NodeData nd{Mat64(m, d), Vec64(m)};
    Vec64 w(d), shift(d);
    for (std::size_t k = 0; k < d; ++k) {
      w[k] = rng.normal() + static_cast<double>(i % 3);  // heterogeneous targets
      shift[k] = 0.5 * rng.normal();
    }
    for (std::size_t r = 0; r < m; ++r)
      for (std::size_t k = 0; k < d; ++k) nd.A(r, k) = rng.normal() + shift[k];
    for (std::size_t r = 0; r < m; ++r) nd.b[r] = nd.A.row(r).dot(w) + 0.1 * rng.normal();
    p.nodes.push_back(std::move(nd));
  }
  return p;
}

Problem makeL1Logistic(std::size_t n, std::size_t d, std::size_t m, double l1, double l2, std::uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.loss = Loss::Logistic;
  p.l1 = l1;
  p.l2 = l2;
  Vec64 truth = Vec64::Zero(d);
  for (std::size_t k = 0; k < d; k += 4) truth[k] = 2.0 * rng.normal();  // sparse ground truth
  for (std::size_t i = 0; i < n; ++i) {
    NodeData nd{Mat64(m, d), Vec64(m)};
    const double mean = 0.3 * (static_cast<double>(i) - n / 2.0);  // each node sees a shifted input region
    for (std::size_t r = 0; r < m; ++r) {
      for (std::size_t k = 0; k < d; ++k) nd.A(r, k) = rng.normal() + (k % 5 == 0 ? mean : 0.0);
      const double pr = 1.0 / (1.0 + std::exp(-nd.A.row(r).dot(truth)));
      nd.b[r] = rng.uniform() < pr ? 1.0 : 0.0;
    }
    p.nodes.push_back(std::move(nd));
  }
  return p;
}

double Problem::smoothness() const {
  double L = 0.0;
  for (const auto& nd : nodes) {
    const double m = static_cast<double>(nd.A.rows());
    const double top = Eigen::SelfAdjointEigenSolver<Mat64>(nd.A.transpose() * nd.A / m).eigenvalues().maxCoeff();
    L = std::max(L, (loss == Loss::Ridge ? top : 0.25 * top) + l2);
  }
  return L;
}

Vec64 Problem::solve(const std::vector<std::size_t>& members) const {
  std::vector<std::size_t> ids = members;
  if (ids.empty())
    for (std::size_t i = 0; i < nodes.size(); ++i) ids.push_back(i);
  const auto d = static_cast<Eigen::Index>(dim());
  if (loss == Loss::Ridge && l1 == 0.0) {
    Mat64 H = Mat64::Zero(d, d);
    Vec64 rhs = Vec64::Zero(d);
    for (auto i : ids) {
      const double m = static_cast<double>(nodes[i].A.rows());
      H += nodes[i].A.transpose() * nodes[i].A / m;
      rhs += nodes[i].A.transpose() * nodes[i].b / m;
    }
    H /= static_cast<double>(ids.size());
    rhs /= static_cast<double>(ids.size());
    H += l2 * Mat64::Identity(d, d);
    return H.ldlt().solve(rhs);
  }
  // Proximal gradient with step 1/L on (1/|ids|) sum f_i + l1 ||x||_1, to a fixed point.
  const double step = 1.0 / smoothness();
  Vec64 x = Vec64::Zero(d), g, acc;
  for (int it = 0; it < 200000; ++it) {
    acc = Vec64::Zero(d);
    for (auto i : ids) {
      lossGrad(i, x, g);
      acc += g;
    }
    acc /= static_cast<double>(ids.size());
    Vec64 next = (x - step * acc).unaryExpr([&](double v) { return softThreshold(v, step * l1); });
    const double change = (next - x).norm();
    x = std::move(next);
    if (change <= 1e-17 * std::max(1.0, x.norm())) break;
  }
  return x;
}

}  // namespace gossip::testing
