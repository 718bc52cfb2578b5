#pragma once
// CHOCO-SGD (Koloskova, Stich, Jaggi 2019), paper Algorithm 2 order (ALGORITHMS.md §4.2):
//   x_half = x - lr g;  q_i = Q(x_half - xhat_i);  xhat_i += q_i;  xhat_j += q_j for every neighbour j
//   x = x_half + gamma * sum_j w_ij (xhat_j - xhat_i)      (updated hats)
// Replica method: each edge keeps a full-precision replica of the neighbour's public xhat_j, so a weight
// change or an edge drop needs no reset (the aggregate form s_i = sum_j w_ij xhat_j could not be re-weighted).
//
// The consensus step (docs/algorithms.md, "CHOCO's consensus step"). CHOCO's theory gives a safe gamma of
// order rho^2 delta (rho the spectral gap, delta the compressor's contraction): about 1e-4 for top-1% on a
// 12-node torus, where 0.02 trains well and 0.05 slowly diverges (results §3). So:
//  - gamma = 0 (the config default) takes min(1, 2 delta), delta = the compressor's contraction at this
//    model's size (1/(1+omega) for an unbiased one): 1 for fp32 (CHOCO is then D-PSGD), 0.02 for top-1%.
//    The factor 2 is measured, not derived: top-1% was stable up to about 3 delta on the torus. It holds
//    for supports chosen from x itself (top-k), whose real contraction on a model is far above the
//    nominal k/d. rand-k and cltk (a support chosen without looking at this node's x) achieve about the
//    nominal delta, and drift apart at 2 delta (16-node ring, 1% of the softmax: relative consensus 9 and
//    28 at 3,000 rounds, results §3); they default to delta, which was stable there.
//  - gamma_adapt halves gamma whenever this node's relative disagreement ||xhat_i - sum_j w_ij xhat_j||^2 /
//    ||x_i||^2, averaged over windows of kGammaWindow mixed rounds, has risen 3 windows in a row to 4x its
//    lowest since it last fell (core/consensus_watch.h, the rule the drift warning uses). Every node sees
//    its own disagreement grow when the consensus diverges, so all halve, though not in the same round:
//    while their steps differ the mixing is not symmetric and the average of the x_i drifts a little.

#include "algorithms/algorithm.h"
#include "algorithms/replicas.h"
#include "core/consensus_watch.h"

namespace gossip::algo {

class Choco final : public Algorithm {
 public:
  Choco(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "choco"; }
  bool stateless() const override { return false; }
  bool acceptsZeroGradient() const override { return true; }
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  std::span<const Real> publicState() const override;
  void addEdge(EdgeKey j, std::span<const Real> neighbourPublic) override;
  void adoptEdge(EdgeKey j, Vec&& neighbourPublic) override;
  void dropEdge(EdgeKey j) override;
  std::vector<EdgeKey> edges() const override;
  std::size_t edgeCount() const override { return edges_.size(); }
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;
  double consensusStep() const override { return gamma_; }

  static constexpr unsigned kGammaWindow = 50;

 private:
  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  Vec hat_;                       // xhat_i, this node's public copy (what neighbours replicate)
  detail::ReplicaEdges edges_;  // replicas of the neighbours' xhat_j
  Vec scratch_;
  double lr_ = 0;
  double gamma_;  // the step in use (p_.gamma resolved, then halved by the adaptation)
  // gamma_adapt: the current window's sum of squared disagreements and its length, and the rule.
  double windowSum_ = 0;
  unsigned windowCount_ = 0;
  ConsensusWatch watch_ = freshWatch();
  // The rule: 3 rising windows to 4x the lowest since the first fall. Its early rule (values above 1 that
  // rise from the start) caught nothing more in a test of it: a step that diverges from the start grows
  // x_i as fast as the disagreement, and this ratio stays flat (docs/algorithms.md, limits).
  static ConsensusWatch freshWatch() { return ConsensusWatch{3, 4.0, /*earlyRule=*/false}; }
  void adaptGamma(Round t);
};

}  // namespace gossip::algo
