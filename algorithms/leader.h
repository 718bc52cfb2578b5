#pragma once
// Leader SGD on a graph: D-PSGD with a pull toward the best-performing node of the neighbourhood.
// Source: Teng et al., "Leader Stochastic Gradient Descent for Distributed Training of Deep Learning Models"
// (NeurIPS 2019). There every worker is pulled toward the leader, the worker with the lowest loss:
// x_i <- x_i - lr (g_i + lambda (x_i - x_leader)). On a graph without a server (docs/algorithms.md, "lsgd"):
//   each node reports L_i, an exponential average of its minibatch losses, after its D-PSGD message;
//   the local leader l of node i is the node with the lowest L among i and the neighbours whose message
//   arrived this round (ties: the lowest id);
//   x_i <- sum_j w_ij C(x_j) - lr g_i - lr lambda (C(x_i) - C(x_l))     in rounds t % period == 0 (and l != i),
//   x_i <- sum_j w_ij C(x_j) - lr g_i                                   otherwise (plain D-PSGD).
// Built on Dpsgd: its mix with the pull added before the prox (Dpsgd::mix), so with lambda = 0 the method
// is D-PSGD, bit for bit (test_leader.cc). The leader's model C(x_l) is its D-PSGD
// message, already on the wire: the pull costs 8 bytes per message (the loss).
// Not built: the global leader of the paper's multi-leader variant (the best node of the whole graph,
// spread by gossip, its model relayed to every node): docs/algorithms.md says why it is left open.
#include <vector>

#include "algorithms/stateless.h"

namespace gossip::algo {

class Lsgd final : public Dpsgd {
 public:
  Lsgd(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0);
  std::string_view name() const override { return "lsgd"; }
  void noteLoss(double loss) override;
  void prepare(Round t, const Vec& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

  // The reported loss average and the local leader of the last applied round (this node when it led, or
  // before any round).
  double reportedLoss() const { return avgLoss_; }
  PeerId lastLeader() const { return leader_; }

  static constexpr double kLossAverage = 0.1;  // L <- (1 - a) L + a loss
  static constexpr std::size_t kHeaderBytes = 8;

 private:
  double avgLoss_ = std::numeric_limits<double>::quiet_NaN();  // NaN until the first loss
  bool pullRound_ = false;
  PeerId leader_;
  Vec lead_;                      // C(x_l), decoded in pull rounds
  std::vector<Incoming> values_;  // the arrived messages without their loss trailer (reused every round)
};

}  // namespace gossip::algo
