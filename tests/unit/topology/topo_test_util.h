#pragma once
// Helpers for the topology tests: member views and oracles written independently of the library
// (straight from the formulas in ALGORITHMS.md §2 and Appendix B), so a test compares two
// implementations rather than the library with itself.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include <Eigen/Dense>

#include "core/types.h"
#include "topology/topology.h"

namespace gossip::topology::testutil {

inline std::vector<PeerId> iota(std::size_t n, PeerId start = 0, PeerId stride = 1) {
  std::vector<PeerId> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = start + static_cast<PeerId>(i) * stride;
  return ids;
}

inline TopologyParams params(Kind k) {
  TopologyParams p;
  p.kind = k;
  return p;
}

// 0/1 adjacency A[i][j] = 1 iff j is in i's in-list (what row i of W may use).
inline Eigen::MatrixXd adjacency(const Graph& g) {
  const auto n = Eigen::Index(g.size());
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, n);
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (auto j : g.in[i]) A(Eigen::Index(i), Eigen::Index(j)) = 1.0;
  }
  return A;
}

// Appendix B metropolis(A): loop over the matrix, self weight last.
inline Eigen::MatrixXd metropolisOracle(const Eigen::MatrixXd& A) {
  const auto n = A.rows();
  const Eigen::VectorXd deg = A.rowwise().sum();
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) {
      if (A(i, j) != 0) W(i, j) = 1.0 / (1.0 + std::max(deg(i), deg(j)));
    }
    W(i, i) = 1.0 - W.row(i).sum();
  }
  return W;
}

// Appendix B maxdeg(A).
inline Eigen::MatrixXd maxDegreeOracle(const Eigen::MatrixXd& A) {
  const auto n = A.rows();
  const Eigen::VectorXd deg = A.rowwise().sum();
  const double dm = n > 0 ? deg.maxCoeff() : 0.0;
  Eigen::MatrixXd W = A / (dm + 1.0);
  for (Eigen::Index i = 0; i < n; ++i) W(i, i) = 1.0 - deg(i) / (dm + 1.0);
  return W;
}

// Appendix B ring(n): 1/3 on the diagonal and both cyclic neighbours (accumulated, as numpy does).
inline Eigen::MatrixXd ringThirds(int n) {
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    W(i, i) = 1.0 / 3;
    W(i, (i + 1) % n) = 1.0 / 3;
    W(i, (i - 1 + n) % n) = 1.0 / 3;
  }
  return W;
}

// Receiver-side one-peer matrix for round t: i hears from i - 2^(t mod tau), weights 1/2.
inline Eigen::MatrixXd onePeerOracle(int n, int t) {
  int tau = 0;
  while ((1 << tau) < n) ++tau;
  const int hop = 1 << (t % tau);
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    W(i, i) += 0.5;
    W(i, ((i - hop) % n + n) % n) += 0.5;
  }
  return W;
}

inline bool isSimpleUndirected(const Graph& g) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& l = g.out[i];
    for (std::size_t k = 0; k < l.size(); ++k) {
      if (l[k] == i || l[k] >= g.size()) return false;
      if (k > 0 && l[k] <= l[k - 1]) return false;  // sorted, no duplicates
      const auto& back = g.out[l[k]];
      if (std::find(back.begin(), back.end(), std::uint32_t(i)) == back.end()) return false;
    }
    if (g.in[i] != g.out[i]) return false;
  }
  return true;
}

inline std::size_t edgeCount(const Graph& g) {
  std::size_t s = 0;
  for (const auto& l : g.out) s += l.size();
  return g.directed ? s : s / 2;
}

}  // namespace gossip::topology::testutil
