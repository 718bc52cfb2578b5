// Spectral summary of a mixing matrix (ALGORITHMS.md §1): rho = ||W - 11^T/n||_2, gap = 1 - rho,
// beta = ||I - W||_2, and for symmetric W its second-largest and smallest eigenvalues. Dense O(n^3):
// meant for tests, the CLI and an occasional /metrics refresh, not for the round loop.
#include <cmath>
#include <limits>

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include "core/error.h"
#include "topology/topology.h"

namespace gossip::topology {

namespace {

// Absolute tolerance for treating W as symmetric; weights are O(1) sums of a few reciprocals.
constexpr double kSymmetryTol = 1e-12;

double spectralNorm(const Eigen::MatrixXd& M) {
  if (M.size() == 0) return 0.0;
  Eigen::BDCSVD<Eigen::MatrixXd> svd(M);  // singular values only; BDCSVD falls back to Jacobi when small
  return svd.singularValues()(0);
}

}  // namespace

Spectrum analyze(const Eigen::MatrixXd& W) {
  if (W.rows() != W.cols() || W.rows() == 0) {
    throw ConfigError("analyze: W must be a non-empty square matrix, got " + std::to_string(W.rows()) + "x" +
                      std::to_string(W.cols()));
  }
  const Eigen::Index n = W.rows();
  const Eigen::MatrixXd J = Eigen::MatrixXd::Constant(n, n, 1.0 / double(n));
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(n, n);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Spectrum s;
  if ((W - W.transpose()).cwiseAbs().maxCoeff() <= kSymmetryTol) {
    // Symmetric: W - J and I - W are symmetric too, so their 2-norms are largest |eigenvalue|. Computing
    // them from their own eigenvalues (rather than assuming the top eigenvalue of W is 1) keeps rho
    // honest even for a W that is not stochastic.
    const Eigen::MatrixXd Ws = 0.5 * (W + W.transpose());
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Ws, Eigen::EigenvaluesOnly);
    const Eigen::VectorXd& ev = eig.eigenvalues();  // ascending
    s.lambdaN = ev(0);
    s.lambda2 = n >= 2 ? ev(n - 2) : kNaN;  // n = 1 has no second eigenvalue
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> dev(Ws - J, Eigen::EigenvaluesOnly);
    s.rho = dev.eigenvalues().cwiseAbs().maxCoeff();
    s.beta = (Eigen::VectorXd::Ones(n) - ev).cwiseAbs().maxCoeff();
  } else {
    s.lambda2 = kNaN;
    s.lambdaN = kNaN;
    s.rho = spectralNorm(W - J);
    s.beta = spectralNorm(I - W);
  }
  s.gap = 1.0 - s.rho;
  return s;
}

}  // namespace gossip::topology
