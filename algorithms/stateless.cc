#include "algorithms/stateless.h"

#include "algorithms/mixing.h"
#include "algorithms/prox.h"

namespace gossip::algo {

Dpsgd::Dpsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : p_(p), c_(c), self_(self), own_(Vec::Zero(x0.size())), step_(Vec::Zero(x0.size())) {
  x_ = x0;
}

void Dpsgd::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  Rng rng(deriveSeed({p_.seed, self_, t}));
  c_.encode(detail::view(x_), rng, out);
  detail::decodeInto(c_, out.view(), own_);
  step_ = lr * g;
  lr_ = lr;
}

void Dpsgd::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Missing neighbours fold their weight into the self weight (replace-with-own).
  double selfWeight = row.self;
  x_.setZero();
  for (const auto& [j, w] : row.neighbors) {
    if (auto m = detail::findMessage(msgs, j))
      detail::decodeAdd(c_, *m, x_, w);
    else
      selfWeight += w;
  }
  x_ += selfWeight * own_ - step_;
  proxL1(x_, lr_ * p_.l1);
}

DeepSqueeze::DeepSqueeze(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0)
    : p_(p), c_(c), self_(self), ef_(c, static_cast<std::uint32_t>(x0.size()), p.beta), own_(Vec::Zero(x0.size())) {
  if (!(p.eta > 0.0 && p.eta <= 1.0)) throw ConfigError("algorithm.eta must be in (0, 1] for deepsqueeze");
  x_ = x0;
}

void DeepSqueeze::prepare(Round t, const Vec& g, double lr, compress::Encoded& out) {
  x_ -= lr * g;  // x_half
  Rng rng(deriveSeed({p_.seed, self_, t}));
  // v = x_half + delta; c = C(v) into out and own_; delta updated.
  ef_.compress(detail::view(x_), rng, out, std::span<double>(own_.data(), static_cast<std::size_t>(own_.size())));
  lr_ = lr;
}

void DeepSqueeze::apply(Round, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  double present = 0.0;
  for (const auto& [j, w] : row.neighbors) {
    if (auto m = detail::findMessage(msgs, j)) {
      detail::decodeAdd(c_, *m, x_, p_.eta * w);
      present += w;
    }
  }
  x_ -= (p_.eta * present) * own_;
  proxL1(x_, lr_ * p_.l1);
}

}  // namespace gossip::algo
