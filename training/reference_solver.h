#pragma once
// Centralized reference solver for the convex problems (logistic, least squares, softmax with l2, l1):
// FISTA with backtracking and adaptive restart on the global objective, run to machine precision. Its x*
// gives "suboptimality" and is the target of the exactness tests (ED, LEAD, Prox-LEAD).
//
// Which objective: the decentralized algorithms solve
//     F(x) = (1/n) sum_i f_i(x) + l1 ||x||_1,   f_i(x) = (1/m_i) sum_{j in S_i} l_j(x) + l2/2 ||x||^2,
// the mean of the node means. When the shards are unequal (Dirichlet partitions, own files), sample j of
// node i carries weight 1/(n m_i), NOT 1/N as in the pooled mean over all N samples. The solver evaluates
// exactly this F, one Model::lossAndGrad call per shard, so it always matches what the nodes optimize.
#include <cstdint>
#include <span>
#include <vector>

#include "training/model.h"

namespace gossip::training {

// One node's data: rows of a data set. The referenced data and rows must outlive the call.
struct Shard {
  const Dataset* data;
  std::span<const std::uint32_t> rows;
};

struct ReferenceOptions {
  std::size_t max_iters = 200000;
  double tol = 1e-15;           // stop when ||x_{k+1} - x_k|| <= tol * ||x_{k+1}||
  std::size_t stall_iters = 2000;  // ...or when that relative step has not reached a new low for this many
                                   // iterations after falling below 1e-12 (rounding noise floor)
  double max_seconds = 0;       // > 0: give up after this much wall time (converged and stalled stay false)
};

struct ReferenceResult {
  Vec x;
  double objective = 0;    // F(x) including l1
  double residual = 0;     // proxGradResidual at the final step size
  double lipschitz = 0;    // final backtracking estimate of L
  std::size_t iterations = 0;
  bool converged = false;  // tol reached (false also when stopped by stall, see `stalled`)
  bool stalled = false;
  bool timed_out = false;  // stopped by max_seconds
};

// Whether a bounded solve (max_iters, max_seconds) found the optimum. Without regularisation a logistic or
// softmax model on separable data has no finite optimum: the iterate norm grows forever and the loss tends
// to 0, so the unbounded solver would run to max_iters. Callers use this to skip suboptimality then.
bool referenceFound(const ReferenceResult& r);

// (1/n) sum_i f_i(x), and its gradient into grad when given.
double smoothObjective(const Model& model, std::span<const Shard> shards, const Vec& x, Vec* grad = nullptr);
// Smooth part plus model.l1() ||x||_1.
double compositeObjective(const Model& model, std::span<const Shard> shards, const Vec& x);
// prox_{s l1 ||.||_1}(v): elementwise soft threshold at s * l1.
void softThreshold(Vec& v, double threshold);
// ||x - prox_{sR}(x - s grad F(x))|| / s: the norm of the gradient mapping, zero exactly at the optimum.
double proxGradResidual(const Model& model, std::span<const Shard> shards, const Vec& x, double step);

// Starts from x0 when given, else from zero. ConfigError on an empty shard list or empty shards.
ReferenceResult solveReference(const Model& model, std::span<const Shard> shards, const ReferenceOptions& opt = {},
                               const Vec* x0 = nullptr);

}  // namespace gossip::training
