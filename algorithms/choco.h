#pragma once
// CHOCO-SGD (Koloskova, Stich, Jaggi 2019), paper Algorithm 2 order (ALGORITHMS.md §4.2):
//   x_half = x - lr g;  q_i = Q(x_half - xhat_i);  xhat_i += q_i;  xhat_j += q_j for every neighbour j
//   x = x_half + gamma * sum_j w_ij (xhat_j - xhat_i)      (updated hats)
// Replica method: each edge keeps a full-precision replica of the neighbour's public xhat_j, so a weight
// change or an edge drop needs no reset (the aggregate form s_i = sum_j w_ij xhat_j could not be re-weighted).
#include <map>

#include "algorithms/algorithm.h"

namespace gossip::algo {

class Choco final : public Algorithm {
 public:
  Choco(const AlgorithmParams& p, const compress::Compressor& c, PeerId self, const Vec& x0);
  std::string_view name() const override { return "choco"; }
  bool stateless() const override { return false; }
  void prepare(Round t, const Vec& g, double lr, compress::Encoded& out) override;
  void apply(Round t, std::span<const Incoming> msgs, const topology::MixingRow& row) override;
  std::vector<double> publicState() const override;
  void addEdge(EdgeKey j, std::span<const double> neighbourPublic) override;
  void dropEdge(EdgeKey j) override;
  std::vector<EdgeKey> edges() const override;
  std::size_t edgeCount() const override { return edges_.size(); }
  void save(ByteWriter& w) const override;
  void load(ByteReader& r) override;

 private:
  struct Edge {
    Incarnation incarnation = 0;  // the neighbour's life this replica belongs to
    Vec hat;                      // replica of its xhat_j
  };
  AlgorithmParams p_;
  const compress::Compressor& c_;
  PeerId self_;
  Vec hat_;                       // xhat_i, this node's public copy (what neighbours replicate)
  std::map<PeerId, Edge> edges_;  // at most one edge per neighbour id
  Vec scratch_;
  double lr_ = 0;
};

}  // namespace gossip::algo
