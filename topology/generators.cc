// Deterministic generators (ring, grid, torus, complete, star, exponential graphs) and the
// buildGraph dispatcher. Everything works on ranks in the sorted view, so the graph is a pure
// function of (sorted alive ids, parameters).
#include <string>

#include "core/error.h"
#include "topology/detail.h"

namespace gossip::topology {
namespace detail {

Graph ring(std::vector<PeerId> nodes, unsigned extra) {
  const std::size_t n = nodes.size();
  UndirectedBuilder b(n);
  // Offsets 1..1+extra on each side; on a small ring they wrap onto each other or onto the node
  // itself, which the builder de-duplicates, so the degree saturates at n - 1 (complete graph).
  const std::size_t reach = std::min<std::size_t>(std::size_t{1} + extra, n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 1; k <= reach; ++k) {
      b.addEdge(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>((i + k) % n));
    }
  }
  return b.finish(std::move(nodes));
}

// Members are laid row-major on rows x cols cells; only the last row can be partial. Every row and
// every column is a path over its occupied cells (closed into a cycle for the torus). Skipping the
// empty cells is the repair DESIGN.md §5 asks for: a dead member shifts the later ones, and the
// graph stays connected because row 0 is full and every column hangs off it.
Graph grid(std::vector<PeerId> nodes, unsigned rows, bool wrap) {
  const std::size_t n = nodes.size();
  UndirectedBuilder b(n);
  const auto [used_rows, cols] = gridShape(n, rows);
  auto link = [&](std::size_t a, std::size_t c) {
    b.addEdge(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(c));
  };
  for (std::size_t r = 0; r < used_rows; ++r) {
    const std::size_t first = r * cols;
    const std::size_t last = std::min(first + cols, n) - 1;
    for (std::size_t p = first; p < last; ++p) link(p, p + 1);
    if (wrap && last > first + 1) link(last, first);
  }
  for (std::size_t c = 0; c < cols && c < n; ++c) {
    std::size_t last = c;
    for (std::size_t p = c + cols; p < n; p += cols) {
      link(p - cols, p);
      last = p;
    }
    if (wrap && last >= c + 2 * cols) link(last, c);
  }
  return b.finish(std::move(nodes));
}

Graph complete(std::vector<PeerId> nodes) {
  const std::size_t n = nodes.size();
  UndirectedBuilder b(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = i + 1; j < n; ++j) b.addEdge(i, j);
  }
  return b.finish(std::move(nodes));
}

Graph star(std::vector<PeerId> nodes) {
  const std::size_t n = nodes.size();
  UndirectedBuilder b(n);
  for (std::uint32_t j = 1; j < n; ++j) b.addEdge(0, j);
  return b.finish(std::move(nodes));
}

// ALGORITHMS.md §2.5: i sends to i + 2^k (mod n), k < tau. Since 2^k < n for k < tau, the tau targets
// are distinct and never i itself, so every node has in- and out-degree exactly tau.
Graph exponential(std::vector<PeerId> nodes) {
  const std::size_t n = nodes.size();
  const unsigned tau = exponentialTau(n);
  std::vector<std::vector<std::uint32_t>> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (unsigned k = 0; k < tau; ++k) {
      out[i].push_back(static_cast<std::uint32_t>((i + (std::size_t{1} << k)) % n));
    }
  }
  return makeDirected(std::move(nodes), std::move(out));
}

// Round t uses the single hop 2^(t mod tau): a permutation, so in- and out-degree are both 1.
Graph onePeerExponential(std::vector<PeerId> nodes, Round round) {
  const std::size_t n = nodes.size();
  const unsigned tau = exponentialTau(n);
  std::vector<std::vector<std::uint32_t>> out(n);
  if (tau > 0) {
    const std::size_t hop = std::size_t{1} << (round % tau);
    for (std::size_t i = 0; i < n; ++i) out[i].push_back(static_cast<std::uint32_t>((i + hop) % n));
  }
  return makeDirected(std::move(nodes), std::move(out));
}

}  // namespace detail

Graph buildGraph(std::span<const PeerId> alive, const TopologyParams& params) {
  std::vector<PeerId> nodes = detail::sortedMembers(alive);
  switch (params.kind) {
    case Kind::Ring: return detail::ring(std::move(nodes), params.extra);
    case Kind::Grid: return detail::grid(std::move(nodes), params.rows, false);
    case Kind::Torus: return detail::grid(std::move(nodes), params.rows, true);
    case Kind::RandomRegular: return detail::randomRegular(std::move(nodes), params.degree, params.seed);
    case Kind::ErdosRenyi: return detail::erdosRenyi(std::move(nodes), params.edge_prob, params.seed);
    case Kind::Exponential: return detail::exponential(std::move(nodes));
    case Kind::OnePeerExponential: return detail::onePeerExponential(std::move(nodes), params.round);
    case Kind::Complete: return detail::complete(std::move(nodes));
    case Kind::Star: return detail::star(std::move(nodes));
    case Kind::EdgeList: return detail::edgeList(std::move(nodes), params.edge_file);
  }
  throw ConfigError("topology: unknown kind " + std::to_string(static_cast<int>(params.kind)));
}

}  // namespace gossip::topology
