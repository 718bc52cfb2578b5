#pragma once
// Codistillation on a graph (Sodhani, Delalleau, Assran, Sinha, Ballas, Rabbat, "A Closer Look at
// Codistillation for Distributed Training", 2020; after Anil et al., "Large Scale Distributed Neural Network
// Training through Online Distillation", ICLR 2018). Nodes never average parameters. Each node keeps a copy
// of every neighbour's model and adds to its own loss a distillation term toward the copies' mean
// prediction on its own minibatch (docs/algorithms.md, "codistill"):
//   g_i = grad [ CE(y, p(x_i)) + alpha KL( mean_j p(xhat_j) || p(x_i) ) ]   on node i's minibatch
//   x_i <- prox(x_i - lr g_i)
//   in rounds t % tau == 0:  q_i = C(x_i - xhat_i);  xhat_i += q_i;  xhat_j += q_j for every neighbour j
// alpha is algorithm.distill_weight, tau algorithm.distill_period. The copies are refreshed like CHOCO's
// replicas (a compressed difference against the public copy xhat_i, which every neighbour holds exactly), so
// the copies stay exact replicas under any compressor and a new neighbour starts from xhat_i in full. Outside
// refresh rounds a node sends an empty message: the copies still cost nothing then, and the replica
// protocol's per-round message keeps the rounds of all nodes in step.
// The gradient term is computed by the node's estimator (GradientEstimator::estimateDistilled), from the
// copies teachers() exposes; this class only moves and keeps models. Replica method: every refresh must be
// applied exactly once.
// The paper's variant that sends predictions on a public reference batch instead of models is
// CodistillReference (codistill_reference.h), chosen by algorithm.distill_reference.
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/replicas.h"

namespace gossip::algo {

class Codistill final : public Algorithm {
 public:
  Codistill(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, Vec x0);
  std::string_view name() const override { return "codistill"; }
  bool stateless() const override { return false; }
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
  std::span<const Vec* const> teachers() const override { return teachers_; }
  double distillWeight() const override { return p_.distill_weight; }

  bool refreshRound(Round t) const { return t % p_.distill_period == 0; }
  const Vec& publicCopy() const { return hat_; }
  // The copy of neighbour j's public model (ProtocolError without an edge to j).
  const Vec& copyOf(PeerId j) const;

 private:
  // The teachers are the copies of the last mixed round's neighbours: an edge opened since (a new or restarted
  // neighbour) teaches from the round after its first mix. Why not every open edge: the daemon opens edges
  // by a handshake that may finish before or after a round's local steps, and the simulator before them, so
  // the gradient would depend on timing and the daemons would not end with the simulator's models.
  void useRowAsTeachers(const topology::MixingRow& row);

  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  Vec hat_;  // xhat_i, starts at x0
  detail::ReplicaEdges edges_;  // copies of the neighbours' xhat_j
  std::vector<const Vec*> teachers_;  // &edge.hat of the last row's neighbours (std::map nodes do not move)
  Vec scratch_;
};

}  // namespace gossip::algo
