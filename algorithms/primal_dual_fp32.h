#pragma once
// The primal-dual family's round (algorithms/primal_dual.h) for the fp32 codec with float32 state, in one
// blocked pass over the model: each neighbour's message is read straight from its payload, and the vectors
// the general path builds aside (the decoded yhat_j and the mixed difference Σ_j w_ij (yhat_i - yhat_j) for
// the disagreement) live only as a block of 4,096 values, and so does this node's yhat_i = h_i + q_i: prepare
// writes y_i - h_i straight into the outgoing payload (q_i is y_i - h_i itself), and apply reads it back from
// there. That is 12 bytes per parameter less than the general path, and one pass instead of ~3 per neighbour
// plus 3 (docs/algorithms.md, "Precision and memory").
//
// Bit for bit the general path's state: every value goes through the same float operations in the same order
// (the test builds both and compares them, tests/unit/algorithms/test_primal_dual_fp32.cc). Only the reported
// disagreement may differ in its last bits (its squares are summed in another order).
//
// Only in the float32 build: with float64 state the fp32 codec is lossy and the general path runs.
#include <cstddef>
#include <span>

#include "compressors/fp32_runs.h"

namespace gossip::algo::detail {

// One edge of the round: the replica h_j and the dual share e_ij (updated in place), the neighbour's fp32
// values (a checked body, compressors/cast.h fp32BodyRuns + fp32Finite: one run, or one per part of a
// message read in place), its weight and the dual's step γ/(2η)·w_ij.
struct PrimalDualEdgeFp32 {
  float* h = nullptr;
  float* e = nullptr;
  compress::Fp32Runs body;
  float weight = 0;
  float dual_step = 0;
};

struct PrimalDualFp32 {
  float* x = nullptr;
  float* d = nullptr;
  float* h = nullptr;
  const std::byte* own = nullptr;  // this node's message body q_i (y_i - h_i), written by primalDualPrepareFp32
  const float* g = nullptr;        // this round's gradient (Node's)
  std::size_t dim = 0;
  float keep = 0;  // 1 - alpha: h <- keep h + take yhat
  float take = 0;  // alpha
  float eta = 0;
  bool prox = false;     // Prox-LEAD's soft threshold at `threshold` (proxL1 with eta·l1 > 0)
  float threshold = 0;
};

// q_i = y_i - h_i = x - lr g - lr d - h, written as the fp32 body `out` (dim values), with the float operations
// of the general path's Eigen expression. Returns whether every value is finite.
bool primalDualPrepareFp32(const float* x, const float* g, const float* d, const float* h, float lr, std::size_t dim,
                           std::byte* out);

// yhat_i = h_i + q_i. Per edge: yhat_j = h_j + q_j; h_j <- keep h_j + take yhat_j; e_ij += dual_step (yhat_i - yhat_j); d_i likewise.
// Then x <- prox(x - (eta g + eta d)) and h <- keep h + take yhat. Returns Σ_i (Σ_j w_ij (yhat_i - yhat_j))² in
// double. The bodies must have been checked (length, finiteness): the state is written block by block.
double primalDualApplyFp32(const PrimalDualFp32& s, std::span<const PrimalDualEdgeFp32> edges);

}  // namespace gossip::algo::detail
