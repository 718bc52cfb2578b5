#include "training/reference_solver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace gossip::training {

double smoothObjective(const Model& model, std::span<const Shard> shards, const Vec& x, Vec* grad) {
  const double n = static_cast<double>(shards.size());
  double total = 0.0;
  Vec g;
  if (grad != nullptr) grad->setZero(x.size());
  for (const Shard& s : shards) {
    total += model.lossAndGrad(x, *s.data, s.rows, g);
    if (grad != nullptr) *grad += g;
  }
  if (grad != nullptr) *grad /= n;
  return total / n;
}

double compositeObjective(const Model& model, std::span<const Shard> shards, const Vec& x) {
  return smoothObjective(model, shards, x) + model.l1() * x.lpNorm<1>();
}

void softThreshold(Vec& v, double threshold) {
  if (threshold <= 0) return;
  v = v.array().sign() * (v.array().abs() - threshold).max(0.0);
}

double proxGradResidual(const Model& model, std::span<const Shard> shards, const Vec& x, double step) {
  Vec g;
  smoothObjective(model, shards, x, &g);
  Vec p = x - step * g;
  softThreshold(p, step * model.l1());
  return (x - p).norm() / step;
}

namespace {
// Lipschitz estimate from a gradient difference along a small deterministic perturbation.
double initialLipschitz(const Model& model, std::span<const Shard> shards, const Vec& x, const Vec& gx) {
  Vec d(x.size());
  for (Eigen::Index i = 0; i < d.size(); ++i) d[i] = ((i * 7919) % 13) - 6.0;
  d *= 1e-4 / std::max<double>(d.norm(), 1e-300);
  Vec g2;
  smoothObjective(model, shards, x + d, &g2);
  return std::max<double>((g2 - gx).norm() / d.norm(), 1e-12);
}
}  // namespace

ReferenceResult solveReference(const Model& model, std::span<const Shard> shards, const ReferenceOptions& opt,
                               const Vec* x0) {
  if (shards.empty()) throw ConfigError("reference solver: no shards");
  for (const Shard& s : shards)
    if (s.rows.empty()) throw ConfigError("reference solver: a node has no samples");
  const double l1 = model.l1();
  ReferenceResult res;
  Vec x = x0 != nullptr ? *x0 : Vec::Zero(static_cast<Eigen::Index>(model.dim()));
  GOSSIP_CHECK(static_cast<std::size_t>(x.size()) == model.dim(), "x0 has the wrong size");
  Vec y = x, gy, z, gz, x_prev;
  smoothObjective(model, shards, y, &gy);
  double L = initialLipschitz(model, shards, y, gy);
  double t = 1.0;
  double best_step = std::numeric_limits<double>::infinity();
  std::size_t since_best = 0;
  const auto start = std::chrono::steady_clock::now();
  for (res.iterations = 1; res.iterations <= opt.max_iters; ++res.iterations) {
    // Backtracking on the gradient-difference form of the descent lemma: ||grad(z) - grad(y)|| <= L ||z - y||.
    // It compares gradients rather than objective values, so it stays meaningful at rounding-level steps.
    for (;;) {
      z = y - gy / L;
      softThreshold(z, l1 / L);
      smoothObjective(model, shards, z, &gz);
      const double dz = (z - y).norm();
      const double dg = (gz - gy).norm();
      if (dg <= L * dz * (1 + 1e-12) || dz == 0) break;
      L = std::max(2 * L, dg / dz);
    }
    x_prev = x;
    x = z;
    // Adaptive restart (O'Donoghue & Candes): drop momentum when it points uphill.
    if ((y - x).dot(x - x_prev) > 0) t = 1.0;
    const double t_next = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * t * t));
    const double beta = (t - 1.0) / t_next;
    t = t_next;
    if (beta == 0.0) {
      y = x;
      gy = gz;
    } else {
      y = x + beta * (x - x_prev);
      smoothObjective(model, shards, y, &gy);
    }
    const double rel = (x - x_prev).norm() / std::max<double>(x.norm(), std::numeric_limits<double>::min());
    if (rel <= opt.tol) {
      res.converged = true;
      break;
    }
    if (rel < best_step) {
      best_step = rel;
      since_best = 0;
    } else if (best_step < 1e-12 && ++since_best >= opt.stall_iters) {
      res.stalled = true;
      break;
    }
    if (opt.max_seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > opt.max_seconds) {
      res.timed_out = true;
      break;
    }
  }
  res.iterations = std::min(res.iterations, opt.max_iters);
  res.x = x;
  res.lipschitz = L;
  res.objective = compositeObjective(model, shards, x);
  res.residual = proxGradResidual(model, shards, x, 1.0 / L);
  return res;
}

bool referenceFound(const ReferenceResult& r) { return r.converged || r.stalled; }

}  // namespace gossip::training
