// Seeded random generators: random d-regular and connected Erdos-Renyi. Both draw from an Rng seeded
// by viewSeed(sorted ids, seed), and restart from that same stream, so the result depends only on the
// view and the parameters; the number of restarts is bounded so a hopeless request fails loudly.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_set>

#include "core/error.h"
#include "core/rng.h"
#include "topology/detail.h"

namespace gossip::topology::detail {

namespace {

constexpr int kMaxAttempts = 1000;
constexpr std::size_t kMaxPairDraws = 200'000'000;
constexpr std::uint64_t kRegularTag = 0x7265677531ull;  // generator tags keep the streams apart
constexpr std::uint64_t kErdosTag = 0x6572646f73ull;

std::string shortNumber(double v) {
  std::ostringstream os;
  os << v;  // %g-style: 1e-07 rather than std::to_string's 0.000000
  return os.str();
}

std::uint64_t edgeKey(std::uint32_t a, std::uint32_t b) {
  if (a > b) std::swap(a, b);
  return (std::uint64_t{a} << 32) | b;
}

// One attempt at a simple d-regular graph by random pairing of "points" (d copies of every node),
// rejecting pairs that would make a loop or a double edge (Steger-Wormald). Returns false when the
// leftover points admit no valid pair; the caller restarts.
bool pairPoints(std::size_t n, unsigned d, Rng& rng, std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  std::vector<std::uint32_t> points;
  points.reserve(n * d);
  for (std::uint32_t i = 0; i < n; ++i) points.insert(points.end(), d, i);
  std::unordered_set<std::uint64_t> used;  // membership only: never iterated, so order cannot leak
  used.reserve(n * d);
  edges.clear();
  int misses = 0;
  while (!points.empty()) {
    const std::size_t m = points.size();
    std::size_t a = rng.below(m);
    std::size_t c = rng.below(m - 1);
    if (c >= a) ++c;
    const std::uint32_t u = points[a], v = points[c];
    if (u != v && !used.count(edgeKey(u, v))) {
      used.insert(edgeKey(u, v));
      edges.emplace_back(u, v);
      if (a < c) std::swap(a, c);  // remove the higher slot first so the lower one stays valid
      points[a] = points.back();
      points.pop_back();
      points[c] = points.back();
      points.pop_back();
      misses = 0;
      continue;
    }
    if (++misses < 64) continue;
    // Many misses in a row: check exhaustively whether any valid pair is left at all.
    std::vector<std::uint32_t> left = points;
    std::sort(left.begin(), left.end());
    left.erase(std::unique(left.begin(), left.end()), left.end());
    bool any = false;
    for (std::size_t i = 0; i < left.size() && !any; ++i) {
      for (std::size_t j = i + 1; j < left.size() && !any; ++j) any = !used.count(edgeKey(left[i], left[j]));
    }
    if (!any) return false;
    misses = 0;
  }
  return true;
}

// A connected 2-regular graph is a Hamiltonian cycle, so shuffle and close the cycle: uniform over
// cycles and never needs a restart (pairing would mostly produce several disjoint cycles).
Graph randomCycle(std::vector<PeerId> nodes, Rng& rng) {
  const std::size_t n = nodes.size();
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  UndirectedBuilder b(n);
  for (std::size_t i = 0; i < n; ++i) b.addEdge(order[i], order[(i + 1) % n]);
  return b.finish(std::move(nodes));
}

void validateRegular(std::size_t n, unsigned d) {
  const std::string where = " (degree " + std::to_string(d) + ", " + std::to_string(n) + " nodes)";
  if (d >= n) throw ConfigError("degree: must be less than the number of nodes" + where);
  if ((n * d) % 2 != 0) throw ConfigError("degree: nodes * degree must be even" + where);
  if (d == 0 && n > 1) throw ConfigError("degree: 0 cannot connect more than one node" + where);
  if (d == 1 && n > 2) throw ConfigError("degree: 1 cannot connect more than two nodes" + where);
}

}  // namespace

Graph randomRegular(std::vector<PeerId> nodes, unsigned degree, std::uint64_t seed) {
  const std::size_t n = nodes.size();
  if (n == 0) return UndirectedBuilder(0).finish(std::move(nodes));
  validateRegular(n, degree);
  if (degree + 1 == n) return complete(std::move(nodes));
  Rng rng(viewSeed(nodes, seed, kRegularTag));
  if (degree == 2) return randomCycle(std::move(nodes), rng);
  // Pairing gets stuck often when d is close to n, so a dense graph is built as the complement of
  // a sparse (n-1-d)-regular one; n*(n-1-d) is even whenever n*d is.
  const bool via_complement = 2 * degree > n - 1;
  const unsigned d = via_complement ? static_cast<unsigned>(n - 1 - degree) : degree;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (!pairPoints(n, d, rng, edges)) continue;
    UndirectedBuilder b(n);
    if (via_complement) {
      std::vector<char> adj(n * n, 0);
      for (auto [u, v] : edges) adj[u * n + v] = adj[v * n + u] = 1;
      for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t j = i + 1; j < n; ++j) {
          if (!adj[i * n + j]) b.addEdge(i, j);
        }
      }
    } else {
      for (auto [u, v] : edges) b.addEdge(u, v);
    }
    Graph g = b.finish(nodes);
    if (isConnected(g)) return g;
  }
  throw ConfigError("degree: no connected random " + std::to_string(degree) + "-regular graph on " +
                    std::to_string(n) + " nodes found in " + std::to_string(kMaxAttempts) + " attempts");
}

Graph erdosRenyi(std::vector<PeerId> nodes, double edge_prob, std::uint64_t seed) {
  const std::size_t n = nodes.size();
  if (!(edge_prob >= 0.0 && edge_prob <= 1.0)) {
    throw ConfigError("edge_prob: must be in [0, 1] (0 = 2 ln(n)/n), got " + shortNumber(edge_prob));
  }
  if (n <= 1) return UndirectedBuilder(n).finish(std::move(nodes));
  // 2 ln(n)/n is twice the connectivity threshold, so a handful of samples is usually enough.
  const double p = edge_prob > 0.0 ? edge_prob : std::min(1.0, 2.0 * std::log(double(n)) / double(n));
  Rng rng(viewSeed(nodes, seed, kErdosTag));
  // Bound the total work too, so a hopeless p on a large view fails in seconds, not hours.
  const std::size_t pairs = n * (n - 1) / 2;
  const int attempts = static_cast<int>(std::clamp<std::size_t>(kMaxPairDraws / pairs, 1, kMaxAttempts));
  for (int attempt = 0; attempt < attempts; ++attempt) {
    UndirectedBuilder b(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = i + 1; j < n; ++j) {
        if (rng.uniform() < p) b.addEdge(i, j);
      }
    }
    Graph g = b.finish(nodes);
    if (isConnected(g)) return g;
  }
  throw ConfigError("edge_prob: G(n, p) with n=" + std::to_string(n) + ", p=" + shortNumber(p) +
                    " was not connected in " + std::to_string(attempts) + " samples; raise the probability");
}

}  // namespace gossip::topology::detail
