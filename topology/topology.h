#pragma once
// Topology: pure functions from (alive member view, kind, parameters, seed) to a graph, and mixing
// weights on it. Every node that holds the same view computes the same graph and the same weights
// without talking to anyone (DESIGN.md §5), so nothing here may depend on call order, time or globals.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "core/types.h"

namespace gossip::topology {

enum class Kind {
  Ring,               // sorted ids in a cycle, plus `extra` successors each side
  Grid,               // rows x cols 2-D grid, no wrap-around
  Torus,              // rows x cols with wrap-around
  RandomRegular,      // `degree`-regular, seeded
  ErdosRenyi,         // G(n, p), seeded, resampled until connected
  Exponential,        // static exponential graph (directed: i -> i + 2^k)
  OnePeerExponential, // time-varying: at round t, i -> i + 2^(t mod tau)
  Complete,
  Star,               // smallest id is the hub
  EdgeList,           // explicit file, one "a b" pair per line, ids are member ids
};

struct TopologyParams {
  Kind kind = Kind::Ring;
  unsigned extra = 0;        // ring: extra successors on each side (degree 2 + 2*extra)
  unsigned degree = 4;       // random regular
  double edge_prob = 0.0;    // Erdos-Renyi: 0 = choose 2 ln(n)/n
  unsigned rows = 0;         // grid/torus: 0 = as square as possible
  std::uint64_t seed = 1;
  Round round = 0;           // one-peer exponential: which round's graph
  std::string edge_file;     // edge list
};

// Nodes are the sorted alive ids; adjacency lists hold indices into `nodes`, sorted ascending, no self
// loops. For an undirected graph adjacency is symmetric. For a directed graph, out[i] lists the
// nodes i sends to and in[i] the nodes i receives from.
struct Graph {
  std::vector<PeerId> nodes;
  std::vector<std::vector<std::uint32_t>> out;
  std::vector<std::vector<std::uint32_t>> in;
  bool directed = false;

  std::size_t size() const { return nodes.size(); }
  // Index of id in nodes, or -1.
  std::ptrdiff_t indexOf(PeerId id) const;
};

// Throws ConfigError for impossible parameters (e.g. degree >= n, odd n*degree, unreadable edge file).
Graph buildGraph(std::span<const PeerId> alive, const TopologyParams& params);

// Symmetrised copy of a directed graph (edge i-j if either direction exists). ALGORITHMS.md §2.5:
// CHOCO, ED/NIDS, LEAD and Prox-LEAD need a symmetric W.
Graph symmetrize(const Graph& g);

enum class WeightRule {
  Metropolis,   // w_ij = 1/(1 + max(d_i, d_j))
  MaxDegree,    // w_ij = 1/(d_max + 1)
  Uniform,      // exponential graphs: every weight, self included, 1/(in_degree + 1)
};

// Node i's row of W in member ids: mixed value = self * x_i + sum_j w_ij x_j.
struct MixingRow {
  double self = 1.0;
  std::vector<std::pair<PeerId, double>> neighbors;  // sorted by id
};

MixingRow mixingRow(const Graph& g, PeerId id, WeightRule rule, bool lazy = false);
// Dense W (row i = node i in g.nodes order). lazy: (I + W)/2.
Eigen::MatrixXd mixingMatrix(const Graph& g, WeightRule rule, bool lazy = false);

struct Spectrum {
  double lambda2 = 0;  // second largest eigenvalue (symmetric W only, else NaN)
  double lambdaN = 0;  // smallest eigenvalue (symmetric W only, else NaN)
  double rho = 0;      // ||W - 11^T/n||_2
  double gap = 0;      // 1 - rho
  double beta = 0;     // ||I - W||_2
};
Spectrum analyze(const Eigen::MatrixXd& W);

// Strongly connected for a directed graph, connected for an undirected one; true for n <= 1.
bool isConnected(const Graph& g);

// The largest hop count of a shortest path along the send edges (out), i.e. how many rounds a value
// flooded one hop per round needs to reach every node; size() if some node cannot reach another.
unsigned diameter(const Graph& g);

// Added declarations (helpers the CLI, the daemon and tests need to agree on).

// tau = ceil(log2 n): number of exponential-graph hops, and the period of the one-peer sequence.
// 0 for n <= 1.
unsigned exponentialTau(std::size_t n);

// Grid/torus shape for n members: {rows, cols}. rows = 0 picks floor(sqrt(n)); a requested rows larger
// than n is clamped so that a shrinking cluster still gets a graph. Members are laid row-major, so the
// last row may be partial and `rows` is the number of rows actually used.
std::pair<unsigned, unsigned> gridShape(std::size_t n, unsigned rows);

// Parsing for config and CLI; throws ConfigError naming the value.
Kind parseKind(const std::string& name);
std::string kindName(Kind k);
WeightRule parseWeightRule(const std::string& name);

}  // namespace gossip::topology
