#include "algorithms/lgc_learner.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace gossip::algo {

LgcLearner::LgcLearner(std::uint32_t block, std::uint32_t codes)
    : b_(block), m_(codes), s_(Eigen::MatrixXd::Zero(block, block)) {
  GOSSIP_CHECK(block > 0 && codes > 0 && codes <= block, "lgc learner for block ", block, " and ", codes, " codes");
}

void LgcLearner::add(std::span<const double> x) {
  const std::size_t blocks = x.size() / b_;
  if (blocks == 0) return;
  // The blocks are the columns of a b x blocks matrix laid over x: one rank update for all of them.
  Eigen::Map<const Eigen::MatrixXd> y(x.data(), b_, static_cast<Eigen::Index>(blocks));
  s_.selfadjointView<Eigen::Lower>().rankUpdate(y);
  samples_ += blocks;
}

compress::LgcBasis LgcLearner::basis() const {
  if (samples_ == 0) return {};
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(s_, Eigen::ComputeEigenvectors);  // reads the lower triangle
  GOSSIP_CHECK(eig.info() == Eigen::Success, "lgc: eigendecomposition failed");
  if (!(eig.eigenvalues()(b_ - 1) > 0.0)) return {};
  std::vector<float> cols(std::size_t{b_} * m_);
  for (std::uint32_t j = 0; j < m_; ++j) {
    const auto v = eig.eigenvectors().col(b_ - 1 - j);  // ascending order: the largest last
    Eigen::Index at = 0;
    v.cwiseAbs().maxCoeff(&at);
    const double sign = v(at) < 0 ? -1.0 : 1.0;
    for (std::uint32_t i = 0; i < b_; ++i) cols[std::size_t{j} * b_ + i] = static_cast<float>(sign * v(i));
  }
  return compress::LgcBasis(b_, m_, std::move(cols));
}

void LgcLearner::save(ByteWriter& w) const {
  w.put<std::uint32_t>(b_);
  w.put<std::uint64_t>(samples_);
  for (std::uint32_t c = 0; c < b_; ++c)
    for (std::uint32_t r = c; r < b_; ++r) w.put<double>(s_(r, c));
}

void LgcLearner::load(ByteReader& r) {
  if (r.get<std::uint32_t>() != b_) throw DecodeError("lgc learner: block size differs from the configured one");
  const auto samples = r.get<std::uint64_t>();
  Eigen::MatrixXd s = Eigen::MatrixXd::Zero(b_, b_);
  for (std::uint32_t c = 0; c < b_; ++c)
    for (std::uint32_t i = c; i < b_; ++i) {
      const double v = r.get<double>();
      if (!std::isfinite(v)) throw DecodeError("lgc learner: non-finite second moment");
      s(i, c) = v;
    }
  s_ = std::move(s);
  samples_ = samples;
}

}  // namespace gossip::algo
