#include "compressors/error_feedback.h"

#include <algorithm>

#include "core/error.h"

namespace gossip::compress {

ErrorFeedback::ErrorFeedback(const Compressor& c, std::uint32_t dim, double beta)
    : c_(c), beta_(beta), memory_(dim, 0.0), p_(dim, 0.0) {
  if (!(beta > 0.0 && beta <= 1.0)) throw ConfigError("compressor.beta must be in (0, 1]");
}

void ErrorFeedback::compress(std::span<const Real> x, Rng& rng, Encoded& out, std::span<Real> decoded) {
  GOSSIP_CHECK(x.size() == memory_.size() && decoded.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) p_[i] = memory_[i] + x[i];
  c_.encode(std::span<const Real>(p_), rng, out);
  std::fill(decoded.begin(), decoded.end(), Real(0));
  c_.decodeAdd(out.view(), decoded, 1.0);
  for (std::size_t i = 0; i < x.size(); ++i) memory_[i] = static_cast<Real>((1.0 - beta_) * memory_[i] + beta_ * (p_[i] - decoded[i]));
}

void ErrorFeedback::setMemory(std::span<const Real> m) {
  GOSSIP_CHECK(m.size() == memory_.size());
  std::copy(m.begin(), m.end(), memory_.begin());
}

void ErrorFeedback::reset() { std::fill(memory_.begin(), memory_.end(), Real(0)); }

}  // namespace gossip::compress
