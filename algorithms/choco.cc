#include "algorithms/choco.h"

#include "algorithms/mixing.h"
#include "algorithms/prox.h"

namespace gossip::algo {

Choco::Choco(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : p_(p), c_(c), self_(self), hat_(Vec::Zero(x0.size())), scratch_(Vec::Zero(x0.size())) {
  if (!(p.gamma > 0.0 && p.gamma <= 1.0)) throw ConfigError("algorithm.gamma must be in (0, 1] for choco");
  x_ = x0;
}

void Choco::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  x_ -= lr * g;  // x_half
  scratch_ = x_ - hat_;
  Rng rng(deriveSeed({p_.seed, self_, t}));
  c_.encode(detail::view(scratch_), rng, out);
  detail::decodeAdd(c_, out.view(), hat_, 1.0);  // xhat_i += q_i, exactly as receivers will see it
  lr_ = lr;
}

void Choco::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  if (row.neighbors.size() != edges_.size())
    throw ProtocolError("choco: round has " + std::to_string(row.neighbors.size()) + " neighbours but " +
                        std::to_string(edges_.size()) + " edges");
  // First bring every replica up to date, then mix with the updated hats.
  for (const auto& [j, w] : row.neighbors) {
    auto e = edges_.find(j);
    if (e == edges_.end()) throw ProtocolError("choco: no edge state for neighbour " + std::to_string(j));
    auto m = detail::findMessage(msgs, j);
    if (!m) throw ProtocolError("choco: missing message from neighbour " + std::to_string(j));
    detail::decodeAdd(c_, *m, e->second, 1.0);
  }
  scratch_.setZero();
  double total = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    scratch_ += w * edges_.at(j);
    total += w;
  }
  x_ += p_.gamma * (scratch_ - total * hat_);
  proxL1(x_, lr_ * p_.l1);
}

std::vector<double> Choco::publicState() const { return {hat_.data(), hat_.data() + hat_.size()}; }

void Choco::addEdge(PeerId j, std::span<const double> pub) {
  if (pub.size() != static_cast<std::size_t>(hat_.size()))
    throw ProtocolError("choco: neighbour public state has wrong dimension");
  edges_[j] = Eigen::Map<const Vec>(pub.data(), static_cast<Eigen::Index>(pub.size()));
}

}  // namespace gossip::algo
