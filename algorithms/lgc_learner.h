#pragma once
// The learning half of LGC (docs/lgc.md): a linear autoencoder fitted to blocks of the vectors it is shown.
//
// A linear autoencoder x -> D E x trained for squared error has its optimum where D = E^T spans the top m
// eigenvectors of the data's (uncentred: the codec has no bias) second-moment matrix S = sum x x^T (the
// PCA subspace; Baldi & Hornik 1989). So instead of the paper's SGD training we compute that optimum
// directly: S accumulates over the samples, and basis() takes its top-m eigenvectors. Same answer as a
// trained linear autoencoder at convergence, in one eigendecomposition (b x b), with no learning rate.
#include <cstdint>
#include <span>

#include <Eigen/Dense>

#include "compressors/lgc.h"
#include "core/bytes.h"

namespace gossip::algo {

class LgcLearner {
 public:
  LgcLearner(std::uint32_t block, std::uint32_t codes);

  // Every full block of x (entries [k b, k b + b)) is one sample; the tail is ignored.
  void add(std::span<const double> x);
  std::uint64_t samples() const { return samples_; }
  // The top `codes` eigenvectors of S, each signed so its largest entry is positive (deterministic), in
  // decreasing order of eigenvalue. Empty if no sample was added or S is zero.
  compress::LgcBasis basis() const;

  void save(ByteWriter& w) const;
  void load(ByteReader& r);  // DecodeError (object unchanged) on a size mismatch or non-finite values

 private:
  std::uint32_t b_, m_;
  Eigen::MatrixXd s_;  // lower triangle accumulated, b x b
  std::uint64_t samples_ = 0;
};

}  // namespace gossip::algo
