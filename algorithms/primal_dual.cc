#include "algorithms/primal_dual.h"

#include "algorithms/mixing.h"
#include "algorithms/prox.h"

namespace gossip::algo {

PrimalDual::PrimalDual(std::string name, const AlgorithmParams& p, const compress::Compressor& c, PeerId self,
                       const Vec& x0, std::unique_ptr<compress::Compressor> owned)
    : name_(std::move(name)), p_(p), owned_(std::move(owned)), c_(owned_ ? *owned_ : c), self_(self) {
  if (!(p.alpha > 0.0 && p.alpha <= 1.0)) throw ConfigError("algorithm.alpha must be in (0, 1] for " + name_);
  if (!(p.gamma > 0.0)) throw ConfigError("algorithm.gamma must be > 0 for " + name_);
  const auto n = x0.size();
  x_ = x0;
  d_ = h_ = yhat_ = step_ = scratch_ = Vec::Zero(n);
}

void PrimalDual::startStep(const Vec& g, double lr) {
  x_ -= lr * g;
  proxL1(x_, lr * p_.l1);
  started_ = true;
}

void PrimalDual::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  GOSSIP_CHECK(started_, "startStep must run before the first round");
  eta_ = lr;
  step_ = lr * g;
  scratch_ = x_ - step_ - lr * d_ - h_;  // y_i - h_i
  Rng rng(deriveSeed({p_.seed, self_, t}));
  c_.encode(detail::view(scratch_), rng, out);
  yhat_ = h_;
  detail::decodeAdd(c_, out.view(), yhat_, 1.0);  // yhat_i = h_i + q_i, bit-identical at the receivers
}

void PrimalDual::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  if (row.neighbors.size() != edges_.size())
    throw ProtocolError(name_ + ": round has " + std::to_string(row.neighbors.size()) + " neighbours but " +
                        std::to_string(edges_.size()) + " edges");
  // Validate first so a missing message leaves the state untouched.
  for (const auto& [j, w] : row.neighbors) {
    if (!edges_.count(j)) throw ProtocolError(name_ + ": no edge state for neighbour " + std::to_string(j));
    if (!detail::findMessage(msgs, j)) throw ProtocolError(name_ + ": missing message from " + std::to_string(j));
  }
  const double dualStep = p_.gamma / (2.0 * eta_);
  const double a = p_.alpha;
  for (const auto& [j, w] : row.neighbors) {
    Edge& e = edges_.at(j);
    // scratch = yhat_j = h_j + q_j
    scratch_ = e.h;
    detail::decodeAdd(c_, *detail::findMessage(msgs, j), scratch_, 1.0);  // yhat_j = h_j + q_j
    e.h = (1.0 - a) * e.h + a * scratch_;
    scratch_ = (dualStep * w) * (yhat_ - scratch_);  // this round's increment of e_ij
    e.e += scratch_;
    d_ += scratch_;
  }
  x_ -= step_ + eta_ * d_;
  proxL1(x_, eta_ * p_.l1);
  h_ = (1.0 - a) * h_ + a * yhat_;
}

std::vector<double> PrimalDual::publicState() const { return {h_.data(), h_.data() + h_.size()}; }

void PrimalDual::addEdge(PeerId j, std::span<const double> pub) {
  if (pub.size() != static_cast<std::size_t>(h_.size()))
    throw ProtocolError(name_ + ": neighbour public state has wrong dimension");
  Edge e;
  e.h = Eigen::Map<const Vec>(pub.data(), static_cast<Eigen::Index>(pub.size()));
  e.e = Vec::Zero(h_.size());
  edges_[j] = std::move(e);
}

void PrimalDual::dropEdge(PeerId j) {
  auto it = edges_.find(j);
  if (it == edges_.end()) return;
  d_ -= it->second.e;  // the edge's dual share leaves with the edge (its mirror leaves at the other end)
  edges_.erase(it);
}

}  // namespace gossip::algo
