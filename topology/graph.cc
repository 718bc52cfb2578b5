// Graph plumbing shared by every generator: member ordering, seeding, construction of the adjacency
// lists, symmetrisation and connectivity.
#include <algorithm>
#include <deque>
#include <utility>

#include "core/error.h"
#include "core/rng.h"
#include "topology/detail.h"

namespace gossip::topology {

namespace {

void sortUnique(std::vector<std::uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Breadth-first search from `from` along `adj`: the number of nodes reached and the largest hop count.
std::pair<std::size_t, unsigned> search(const std::vector<std::vector<std::uint32_t>>& adj, std::uint32_t from) {
  std::vector<unsigned> hops(adj.size(), ~0u);
  std::deque<std::uint32_t> queue{from};
  hops[from] = 0;
  std::size_t count = 1;
  unsigned farthest = 0;
  while (!queue.empty()) {
    const std::uint32_t u = queue.front();
    queue.pop_front();
    for (std::uint32_t v : adj[u]) {
      if (hops[v] != ~0u) continue;
      hops[v] = hops[u] + 1;
      farthest = std::max(farthest, hops[v]);
      ++count;
      queue.push_back(v);
    }
  }
  return {count, farthest};
}

// Whether every node is reachable from node 0 along `adj`.
bool reachesAll(const std::vector<std::vector<std::uint32_t>>& adj) { return search(adj, 0).first == adj.size(); }

}  // namespace

std::ptrdiff_t Graph::indexOf(PeerId id) const {
  const auto it = std::lower_bound(nodes.begin(), nodes.end(), id);
  if (it == nodes.end() || *it != id) return -1;
  return it - nodes.begin();
}

Graph symmetrize(const Graph& g) {
  Graph s;
  s.nodes = g.nodes;
  s.out.resize(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    auto& row = s.out[i];
    row = g.out[i];
    row.insert(row.end(), g.in[i].begin(), g.in[i].end());
    sortUnique(row);
  }
  s.in = s.out;
  s.directed = false;
  return s;
}

bool isConnected(const Graph& g) {
  if (g.size() <= 1) return true;
  if (!reachesAll(g.out)) return false;
  // Undirected: out == in, so one search suffices. Directed: strongly connected iff node 0 reaches
  // everyone and everyone reaches node 0 (search along the reversed edges).
  return !g.directed || reachesAll(g.in);
}

unsigned diameter(const Graph& g) {
  unsigned d = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto [reached, farthest] = search(g.out, i);
    if (reached != g.size()) return static_cast<unsigned>(g.size());
    d = std::max(d, farthest);
  }
  return d;
}

unsigned exponentialTau(std::size_t n) {
  unsigned tau = 0;
  while (tau < 64 && (std::size_t{1} << tau) < n) ++tau;
  return tau;
}

std::pair<unsigned, unsigned> gridShape(std::size_t n, unsigned rows) {
  if (n == 0) return {0, 0};
  std::size_t r = rows;
  if (r == 0) {
    r = 1;
    while ((r + 1) * (r + 1) <= n) ++r;  // floor(sqrt(n)) without floating point
  }
  r = std::min(r, n);
  const std::size_t cols = (n + r - 1) / r;
  const std::size_t used_rows = (n + cols - 1) / cols;
  return {static_cast<unsigned>(used_rows), static_cast<unsigned>(cols)};
}

namespace detail {

std::vector<PeerId> sortedMembers(std::span<const PeerId> alive) {
  std::vector<PeerId> nodes(alive.begin(), alive.end());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::uint64_t viewSeed(std::span<const PeerId> nodes, std::uint64_t seed, std::uint64_t tag) {
  std::uint64_t state = deriveSeed({seed, tag, nodes.size()});
  for (PeerId id : nodes) {
    state ^= id;
    state = splitmix64(state);
  }
  return state;
}

Graph UndirectedBuilder::finish(std::vector<PeerId> nodes) {
  GOSSIP_CHECK(nodes.size() == adj_.size());
  for (auto& row : adj_) sortUnique(row);
  Graph g;
  g.nodes = std::move(nodes);
  g.in = adj_;
  g.out = std::move(adj_);
  adj_.clear();
  g.directed = false;
  return g;
}

Graph makeDirected(std::vector<PeerId> nodes, std::vector<std::vector<std::uint32_t>> out) {
  GOSSIP_CHECK(nodes.size() == out.size());
  Graph g;
  g.in.resize(out.size());
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    sortUnique(out[i]);
    for (std::uint32_t j : out[i]) {
      GOSSIP_CHECK(j != i && j < out.size(), "bad directed edge ", i, "->", j);
      g.in[j].push_back(i);  // i ascending, so every in-list comes out sorted
    }
  }
  g.nodes = std::move(nodes);
  g.out = std::move(out);
  g.directed = true;
  return g;
}

}  // namespace detail
}  // namespace gossip::topology
