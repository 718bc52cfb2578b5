#include "compressors/error_feedback.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace gossip::compress {

ErrorFeedback::ErrorFeedback(const Compressor& c, std::uint32_t dim, double beta)
    : c_(c), beta_(beta), memory_(dim, 0.0) {
  if (!(beta > 0.0 && beta <= 1.0)) throw ConfigError("compressor.beta must be in (0, 1]");
}

bool ErrorFeedback::compress(std::span<const Real> x, Rng& rng, Encoded& out) {
  GOSSIP_CHECK(x.size() == memory_.size());
  const std::span<Real> m(memory_);
  if (beta_ == 1.0) {
    // m <- p = m + x; c = C(p); m <- p - c (one rounding, as p - c computed aside would have). The
    // compressor may fuse these: top-k adds in its selection's pass and zeroes m where it keeps p.
    return c_.encodeWithFeedback(m, x, rng, out);
  }
  p_.resize(memory_.size());
  bool finite = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    finite &= std::isfinite(x[i]);
    p_[i] = memory_[i] + x[i];
  }
  if (!finite) return false;
  c_.encode(std::span<const Real>(p_), rng, out);
  // m <- (1 - beta) m + beta p - beta c
  for (std::size_t i = 0; i < x.size(); ++i) m[i] = static_cast<Real>((1.0 - beta_) * m[i] + beta_ * p_[i]);
  c_.decodeAdd(out.view(), m, -beta_);
  return true;
}

void ErrorFeedback::setMemory(std::span<const Real> m) {
  GOSSIP_CHECK(m.size() == memory_.size());
  std::copy(m.begin(), m.end(), memory_.begin());
}

void ErrorFeedback::reset() { std::fill(memory_.begin(), memory_.end(), Real(0)); }

}  // namespace gossip::compress
