// Mixing weights (ALGORITHMS.md §2.1-2.3, 2.5). One kernel computes a node's row from its own list and
// the degrees it can see; mixingRow and mixingMatrix both call it, so what a node computes locally is
// by construction the row of the matrix used for analysis.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "topology/topology.h"

namespace gossip::topology {

namespace {

std::string ruleName(WeightRule rule) {
  switch (rule) {
    case WeightRule::Metropolis: return "metropolis";
    case WeightRule::MaxDegree: return "maxdegree";
    case WeightRule::Uniform: return "uniform";
  }
  return "?";
}

bool allSameSize(const std::vector<std::vector<std::uint32_t>>& lists) {
  return std::all_of(lists.begin(), lists.end(), [&](const auto& l) { return l.size() == lists.front().size(); });
}

// Rejects rule/graph pairs whose W would not be doubly stochastic.
void checkRule(const Graph& g, WeightRule rule) {
  if (g.directed && rule != WeightRule::Uniform) {
    throw ConfigError("weights: " + ruleName(rule) +
                      " needs an undirected graph; symmetrize() the directed graph or use uniform weights");
  }
  // 1/(d_i + 1) is only row-stochastic unless every node has the same in-degree (and, for a directed
  // graph, the same out-degree), ALGORITHMS.md §2.2.
  if (rule == WeightRule::Uniform && !g.in.empty() && !(allSameSize(g.in) && allSameSize(g.out))) {
    throw ConfigError("weights: uniform weights need a regular graph (equal degrees); use metropolis");
  }
}

std::size_t maxDegree(const Graph& g) {
  std::size_t d = 0;
  for (const auto& l : g.in) d = std::max(d, l.size());
  return d;
}

// Node i's weights. The receiver applies them, so a directed graph uses the in-list (who i hears).
// Calls emit(j, w_ij) for each neighbour in ascending index order and returns w_ii.
template <class Emit>
double rowKernel(const Graph& g, std::size_t i, WeightRule rule, std::size_t d_max, bool lazy, Emit&& emit) {
  const auto& nbrs = g.in[i];
  const double d_i = double(nbrs.size());
  const double scale = lazy ? 0.5 : 1.0;
  double self = 1.0;
  for (std::uint32_t j : nbrs) {
    double w = 0;
    switch (rule) {
      case WeightRule::Metropolis: w = 1.0 / (1.0 + double(std::max(nbrs.size(), g.in[j].size()))); break;
      case WeightRule::MaxDegree: w = 1.0 / (double(d_max) + 1.0); break;
      case WeightRule::Uniform: w = 1.0 / (d_i + 1.0); break;
    }
    self -= w;
    emit(j, scale * w);
  }
  // Uniform: set the self weight exactly rather than as 1 minus a rounded sum.
  if (rule == WeightRule::Uniform) self = 1.0 / (d_i + 1.0);
  return lazy ? 0.5 * (1.0 + self) : self;
}

}  // namespace

MixingRow mixingRow(const Graph& g, PeerId id, WeightRule rule, bool lazy) {
  const std::ptrdiff_t i = g.indexOf(id);
  GOSSIP_CHECK(i >= 0, "mixingRow: id ", id, " is not a member of the graph");
  checkRule(g, rule);
  const std::size_t d_max = rule == WeightRule::MaxDegree ? maxDegree(g) : 0;
  MixingRow row;
  row.neighbors.reserve(g.in[std::size_t(i)].size());
  // Nodes are sorted by id and lists by index, so neighbours come out sorted by id.
  row.self = rowKernel(g, std::size_t(i), rule, d_max, lazy,
                       [&](std::uint32_t j, double w) { row.neighbors.emplace_back(g.nodes[j], w); });
  return row;
}

Eigen::MatrixXd mixingMatrix(const Graph& g, WeightRule rule, bool lazy) {
  checkRule(g, rule);
  const std::size_t n = g.size();
  const std::size_t d_max = rule == WeightRule::MaxDegree ? maxDegree(g) : 0;
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(Eigen::Index(n), Eigen::Index(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = Eigen::Index(i);
    W(r, r) = rowKernel(g, i, rule, d_max, lazy, [&](std::uint32_t j, double w) { W(r, Eigen::Index(j)) = w; });
  }
  return W;
}

}  // namespace gossip::topology
