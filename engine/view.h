#pragma once
// Membership views and the graph every holder of a view computes from it (DESIGN.md §5: topology is a pure
// function of the alive view). A member is (id, incarnation): a restarted node is a new member, so every
// edge keyed by its old incarnation is dropped and new edges are opened.
#include <compare>
#include <memory>
#include <vector>

#include "core/types.h"
#include "topology/topology.h"

namespace gossip::engine {

struct Member {
  PeerId id = 0;
  Incarnation incarnation = 0;
  auto operator<=>(const Member&) const = default;
};
using View = std::vector<Member>;  // sorted by id, ids unique

// The graph of a view, with its mixing weights, as every member computes it.
struct ViewGraph {
  View view;
  topology::Graph graph;
  topology::WeightRule weights = topology::WeightRule::Metropolis;
  std::uint64_t epoch = 0;  // bumped by the owner on every change; carried in frame headers
};

// Builds the graph of `view`. Replica methods and every weight rule but `uniform` need a symmetric W, so a
// directed generator's graph is symmetrised unless (stateless && uniform) (ALGORITHMS.md §2.5).
std::shared_ptr<const ViewGraph> buildViewGraph(View view, const topology::TopologyParams& params,
                                                topology::WeightRule weights, bool stateless, std::uint64_t epoch);

// The graph of an alive view for the daemon, which must never stop because churn left a member count the
// configured generator cannot serve. Rule (a pure function of the view, so every holder agrees):
//   random_regular: the largest degree d' <= min(degree, n - 1) with n * d' even and d' >= 2 that gives a
//   connected graph; if there is none, a ring. Any other generator that refuses the count: a ring.
// `fellBack` tells whether the rule was used.
topology::Graph buildAliveGraph(const std::vector<PeerId>& ids, const topology::TopologyParams& params, bool* fellBack);

}  // namespace gossip::engine
