#pragma once
// The exact primal-dual family, one implementation for all of:
//   LEAD      (Liu, Li, Wang, Tang, Yan, ICLR 2021)          compressed, alpha, gamma
//   Prox-LEAD (Li, Liu, Tang, Yan, Yuan, 2021)               LEAD + prox_{eta R} on the primal update
//   NIDS / Exact Diffusion                                   LEAD with exact messages and gamma = 1
// Round (ALGORITHMS.md §4.5, node-wise, eta = lr):
//   y_i = x_i - eta g_i - eta d_i;  q_i = Q(y_i - h_i);  yhat_i = h_i + q_i;  yhat_j = h_j + q_j
//   e_ij += gamma/(2 eta) * w_ij (yhat_i - yhat_j)   for every edge;   d_i = sum_j e_ij
//   x_i = prox(x_i - eta g_i - eta d_i);  h <- (1 - alpha) h + alpha yhat  (own h and every replica h_j)
// This equals the paper's d_i += gamma/(2 eta) (yhat_i - sum_j w_ij yhat_j) because sum_j w_ij = 1, but it
// keeps the dual edge-decomposed: e_ij = -e_ji holds exactly (both ends compute the same yhat_i, yhat_j and
// w_ij), so dropping an edge at both ends keeps sum_i d_i = 0 and the survivors converge to their own exact
// optimum with no global reset (DESIGN.md §4). The reference h_j is replicated per edge for the same reason.
//
// NIDS/ED here: exact (up to rounding) messages are obtained by sending the fp32 difference y_i - h_i with
// alpha = 1 (h tracks yhat), so the wire stays fp32 while the transmitted difference shrinks to 0 at the
// fixed point: machine-precision exactness without fp64 on the wire. For smooth f this is the NIDS recursion,
// whose iterates equal Exact Diffusion's after the first step (ALGORITHMS.md §4.4); "ed" is an alias.
#include <map>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/primal_dual_fp32.h"

namespace gossip::algo {

class PrimalDual final : public Algorithm {
 public:
  // `owned` optionally transfers ownership of the compressor (NIDS uses its own fp32 codec).
  PrimalDual(std::string name, const AlgorithmParams& p, const compress::Compressor& c, PeerId self,
             Vec x0, std::unique_ptr<compress::Compressor> owned = nullptr);
  std::string_view name() const override { return name_; }
  bool stateless() const override { return false; }
  // The fp32 path reads a message in parts (no copy of each received model into one buffer).
  bool readsPayloadParts() const override;
  bool messagesAreFp32() const override { return readsPayloadParts(); }
  bool needsStartStep() const override { return !started_; }
  void startStep(const GradRef& g, double lr) override;
  void prepare(Round t, const GradRef& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  std::span<const Real> publicState() const override;
  void addEdge(EdgeKey j, std::span<const Real> neighbourPublic) override;
  void adoptEdge(EdgeKey j, Vec&& neighbourPublic) override;
  void dropEdge(EdgeKey j) override;
  std::vector<EdgeKey> edges() const override;
  std::size_t edgeCount() const override { return edges_.size(); }
  const Vec* dual() const override { return &d_; }
  const Vec* edgeDual(PeerId j) const override {
    const auto it = edges_.find(j);
    return it == edges_.end() ? nullptr : &it->second.e;
  }
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

 private:
  struct Edge {
    Incarnation incarnation = 0;  // the neighbour's life this edge belongs to
    Vec h;  // replica of the neighbour's reference h_j
    Vec e;  // this node's share of the dual on this edge, e_ij = -e_ji
  };
  std::string name_;
  AlgorithmParams p_;
  std::unique_ptr<compress::Compressor> owned_;
  const compress::Compressor& c_;
  PeerId self_;
  bool started_ = false;
  // The apply of the fp32 codec with float32 state: one blocked pass, no yhat_, scratch_ or mix_
  // (primal_dual_fp32.h).
  void applyFp32(std::span<const Incoming> msgs, const topology::MixingRow& row);

  Vec d_, h_;
  Vec yhat_;  // general path: y_i - h_i until encoded, then yhat_i = h_i + q_i for apply
  // fp32 path: this round's q_i = y_i - h_i in the frame prepare wrote (the caller keeps it until apply)
  const std::byte* ownBody_ = nullptr;
  HeldGradient g_;  // this round's gradient, owned by Node (or the trainer's shared memory) and unchanged until apply
  // The general path's (any codec but fp32 with float32 state), made at its first apply: yhat_j per edge, and
  // sum_j w_ij (yhat_i - yhat_j) for the disagreement. 8 bytes per parameter the fp32 path does without.
  Vec scratch_, mix_;
  std::vector<detail::PrimalDualEdgeFp32> fp32Edges_;  // applyFp32's per-edge pointers, reused every round
  std::vector<std::span<const std::byte>> fp32Runs_;   // applyFp32: the messages' runs, in the row's order
  std::vector<std::size_t> fp32FirstRun_;              // applyFp32: each message's first run in fp32Runs_
  std::map<PeerId, Edge> edges_;  // at most one edge per neighbour id
  double eta_ = 0;
};

}  // namespace gossip::algo
