#pragma once
// Internal helpers shared by the topology translation units (not part of the public interface).
// Generators work in index space: node k is the k-th smallest alive id, so a graph depends only on
// the sorted view and never on the order in which the caller listed the members.
#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "topology/topology.h"

namespace gossip::topology::detail {

// Sorted copy of the view with duplicates removed (a duplicated id is one member, not two nodes).
std::vector<PeerId> sortedMembers(std::span<const PeerId> alive);

// Seed for a randomized generator: mixes the user seed, the generator's tag and every member id, so
// two views that differ in any member get independent graphs while equal views always agree.
std::uint64_t viewSeed(std::span<const PeerId> nodes, std::uint64_t seed, std::uint64_t tag);

// Collects undirected edges in any order (duplicates allowed, self loops ignored) and produces a
// Graph whose out and in lists are identical, sorted and duplicate-free.
class UndirectedBuilder {
 public:
  explicit UndirectedBuilder(std::size_t n) : adj_(n) {}
  void addEdge(std::uint32_t a, std::uint32_t b) {
    if (a == b) return;
    adj_[a].push_back(b);
    adj_[b].push_back(a);
  }
  Graph finish(std::vector<PeerId> nodes);

 private:
  std::vector<std::vector<std::uint32_t>> adj_;
};

// Directed graph from out-lists; fills the matching in-lists. Lists are sorted and de-duplicated.
Graph makeDirected(std::vector<PeerId> nodes, std::vector<std::vector<std::uint32_t>> out);

// Generators (index space, n = nodes.size()); each validates only its own parameters.
Graph ring(std::vector<PeerId> nodes, unsigned extra);
Graph grid(std::vector<PeerId> nodes, unsigned rows, bool wrap);
Graph complete(std::vector<PeerId> nodes);
Graph star(std::vector<PeerId> nodes);
Graph exponential(std::vector<PeerId> nodes);
Graph onePeerExponential(std::vector<PeerId> nodes, Round round);
Graph randomRegular(std::vector<PeerId> nodes, unsigned degree, std::uint64_t seed);
Graph erdosRenyi(std::vector<PeerId> nodes, double edge_prob, std::uint64_t seed);
Graph edgeList(std::vector<PeerId> nodes, const std::string& path);

}  // namespace gossip::topology::detail
