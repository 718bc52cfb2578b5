#include "algorithms/choco.h"

#include <algorithm>
#include <cmath>

#include "algorithms/mixing.h"
#include "algorithms/prox.h"
#include "training/state_io.h"

namespace gossip::algo {
namespace {
constexpr std::uint32_t kChocoTag = serial::fourcc("CHOC");    // before the adaptive step: no gamma saved
constexpr std::uint32_t kChocoTagV2 = serial::fourcc("CHO2");  // + gamma and its watch

// min(1, 2 delta), or delta for a support chosen without looking at x: see choco.h.
double defaultGamma(const compress::Compressor& c, std::size_t dim) {
  const auto q = c.quality(static_cast<std::uint32_t>(dim));
  const double delta = q.kind == compress::Quality::Kind::Contraction ? q.value : 1.0 / (1.0 + q.value);
  const bool blindSupport = c.codec() == compress::CodecId::RandK || c.codec() == compress::CodecId::SharedSupport;
  return std::min(1.0, (blindSupport ? 1.0 : 2.0) * delta);
}
}  // namespace

Choco::Choco(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0)
    : p_(p), c_(c), self_(self), hat_(Vec::Zero(x0.size())), scratch_(Vec::Zero(x0.size())),
      gamma_(p.gamma == 0.0 ? defaultGamma(c, static_cast<std::size_t>(x0.size())) : p.gamma) {
  if (!(gamma_ > 0.0 && gamma_ <= 1.0)) throw ConfigError("algorithm.gamma must be in (0, 1] for choco");
  x_ = std::move(x0);
}

void Choco::prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) {
  if (g.size() != 0) x_ -= lr * g;  // x_half (empty g: zero)
  scratch_ = x_ - hat_;
  Rng rng(roundSeed(p_.seed, self_, p_.incarnation, t));
  c_.encode(detail::view(scratch_), rng, out);
  detail::decodeAdd(c_, out.view(), hat_, 1.0);  // xhat_i += q_i, exactly as receivers will see it
  lr_ = lr;
}

void Choco::apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) {
  // Validation pass: nothing below may throw once a replica has been touched.
  detail::validateReplicaRound("choco", c_, msgs, row, edges_.size(), detail::incarnationLookup(edges_), scratch_);
  // First bring every replica up to date, then mix with the updated hats.
  for (const auto& [j, w] : row.neighbors) detail::decodeAdd(c_, *detail::findMessage(msgs, j), edges_.at(j).hat, 1.0);
  const double total = detail::replicaSum(edges_, row, scratch_);
  disagreement_ = training::norm64(total * hat_ - scratch_);
  x_ += gamma_ * (scratch_ - total * hat_);
  proxL1(x_, lr_ * p_.l1);
  if (p_.gamma_adapt) adaptGamma(t);
}

void Choco::adaptGamma(Round t) {
  if (!std::isfinite(disagreement_)) return;
  windowSum_ += disagreement_ * disagreement_;
  if (++windowCount_ < kGammaWindow) return;
  const double norm2 = training::squaredNorm64(x_);
  const double relative = norm2 > 0 ? windowSum_ / kGammaWindow / norm2 : std::nan("");
  windowSum_ = 0;
  windowCount_ = 0;
  if (!watch_.observe(t, relative)) return;
  gamma_ *= 0.5;
  watch_ = freshWatch();  // judge the new step afresh
}

std::span<const Real> Choco::publicState() const { return detail::view(hat_); }

void Choco::addEdge(EdgeKey j, std::span<const Real> pub) {
  detail::addReplica(edges_, "choco", j, pub, hat_.size());
}

void Choco::adoptEdge(EdgeKey j, Vec&& pub) { detail::addReplica(edges_, "choco", j, std::move(pub), hat_.size()); }

void Choco::dropEdge(EdgeKey j) {
  auto it = edges_.find(j.id);
  if (it != edges_.end() && it->second.incarnation == j.incarnation) edges_.erase(it);
}

std::vector<EdgeKey> Choco::edges() const { return detail::edgeKeys(edges_); }

// x, x_hat and every replica with its key, then the step and its adaptation; scratch_ and lr_ are rebuilt
// by prepare.
void Choco::save(ByteWriter& w) const {
  serial::putTag(w, kChocoTagV2);
  training::putVec(w, x_);
  training::putVec(w, hat_);
  detail::putReplicas(w, edges_);
  w.put<double>(gamma_);
  w.put<double>(windowSum_);
  w.put<std::uint32_t>(windowCount_);
  watch_.save(w);
}

void Choco::load(ByteReader& r) {
  const auto tag = r.get<std::uint32_t>();
  if (tag != kChocoTag && tag != kChocoTagV2) throw DecodeError("choco state: bad tag");
  const auto n = x_.size();
  Vec x(n), hat(n);
  training::getVecInto(r, x, "choco x");
  training::getVecInto(r, hat, "choco x_hat");
  detail::ReplicaEdges edges = detail::getReplicas(r, n, "choco");
  double gamma = gamma_, windowSum = 0;
  std::uint32_t windowCount = 0;
  ConsensusWatch watch = freshWatch();
  if (tag == kChocoTagV2) {  // an older checkpoint keeps the configured step and starts a fresh watch
    gamma = r.get<double>();
    windowSum = r.get<double>();
    windowCount = r.get<std::uint32_t>();
    watch.load(r);
    if (!(gamma > 0.0 && gamma <= 1.0) || !std::isfinite(windowSum) || windowCount >= kGammaWindow)
      throw DecodeError("choco state: bad consensus step or window");
  }
  x_.swap(x);
  hat_.swap(hat);
  edges_.swap(edges);
  gamma_ = gamma;
  windowSum_ = windowSum;
  windowCount_ = windowCount;
  watch_ = watch;
}

}  // namespace gossip::algo
