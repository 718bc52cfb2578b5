#include "daemon/config/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "topology/topology.h"

namespace gossip::daemon {
namespace {

// d-sized vectors an algorithm keeps per node besides the per-neighbour ones (ALGORITHMS.md §4), counting
// the gradient and the round's scratch vectors.
double baseVectors(const std::string& algorithm) {
  if (algorithm == "dpsgd") return 4;
  if (algorithm == "lsgd") return 5;         // + the leader's decoded model
  if (algorithm == "deepsqueeze") return 5;  // + error memory delta
  if (algorithm == "choco") return 5;        // x, x_hat, s, gradient, half step
  if (algorithm == "codistill") return 4;    // x, x_hat, gradient, scratch
  if (algorithm == "nids" || algorithm == "ed") return 7;
  return 8;                                  // lead, prox_lead: x, d, h, hw, y, gradient, scratch
}

double averageDegree(const ClusterConfig& c, double n) {
  if (n <= 1) return 0;
  switch (topology::parseKind(c.topology)) {
    case topology::Kind::Ring: return std::min(n - 1, 2.0 + 2.0 * c.extra);
    case topology::Kind::Grid:
    case topology::Kind::Torus: return std::min(n - 1, 4.0);
    case topology::Kind::RandomRegular: return std::min(n - 1, static_cast<double>(c.degree));
    case topology::Kind::ErdosRenyi: return (c.edge_prob > 0 ? c.edge_prob : 2 * std::log(n) / n) * (n - 1);
    case topology::Kind::Exponential: return std::min(n - 1, 2.0 * std::ceil(std::log2(n)));
    case topology::Kind::OnePeerExponential: return 2;
    case topology::Kind::Complete: return n - 1;
    case topology::Kind::Star: return 2.0 * (n - 1) / n;
    case topology::Kind::EdgeList: return 8;  // unknown before the file is read; a generous guess
  }
  return 8;
}

}  // namespace

MemoryEstimate estimateSimMemory(const Config& c, std::size_t dim, double samples_per_node, int classes,
                                 double data_bytes) {
  MemoryEstimate e;
  std::uint64_t max_id = c.cluster.nodes - 1;
  for (const auto& j : c.faults.join) max_id = std::max<std::uint64_t>(max_id, j.node);
  e.shards = max_id + 1;
  e.node_states = c.cluster.nodes + c.faults.join.size();
  e.average_degree = averageDegree(c.cluster, static_cast<double>(c.cluster.nodes + c.faults.join.size()));
  double vectors = baseVectors(c.algorithm.name) + e.average_degree;
  if (c.algorithm.name == "lsgd" && c.algorithm.leader_base == "deepsqueeze") vectors += 1;  // its error memory
  if (c.compressor_beta < 1.0) vectors += 1;  // error-feedback memory
  const auto& est = c.algorithm.estimator;
  if (est == "lsvrg") vectors += 2;  // reference point and its full gradient
  e.vectors_per_node = vectors;
  const double d = static_cast<double>(dim);
  double per_node = vectors * d * 8.0;
  if (est == "saga") {
    // Linear models (logistic, least squares) keep one scalar per sample; the others a gradient per sample.
    const bool scalar = c.model.kind == "logistic" || c.model.kind == "least_squares";
    per_node += samples_per_node * (scalar ? 8.0 : d * 8.0) + d * 8.0;
  }
  (void)classes;
  per_node += 4096;  // node object, RNG, estimator and codec bookkeeping
  e.state_bytes = per_node * static_cast<double>(e.node_states);
  e.data_bytes = data_bytes;
  e.bytes = e.state_bytes + e.data_bytes;
  return e;
}

std::optional<std::uint64_t> memAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    std::uint64_t kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

std::string formatBytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f kB", bytes / 1e3);
  return buf;
}

void checkSimMemory(const Config& c, const MemoryEstimate& e, std::optional<std::uint64_t> available) {
  if (!available || e.bytes <= static_cast<double>(*available)) return;
  // Name what the user has to change: the join that cuts the data into so many shards, else the node count.
  std::string key = "cluster.nodes = " + std::to_string(c.cluster.nodes);
  if (e.shards > c.cluster.nodes) {
    for (std::size_t i = 0; i < c.faults.join.size(); ++i)
      if (c.faults.join[i].node + std::uint64_t{1} == e.shards) {
        key = "faults.join[" + std::to_string(i) + "].node = " + std::to_string(c.faults.join[i].node) + " (" +
              std::to_string(e.shards) + " data shards)";
        break;
      }
  }
  char per_node[64];
  std::snprintf(per_node, sizeof per_node, "%.0f", e.vectors_per_node);
  throw ConfigError(key + ": the run needs about " + formatBytes(e.bytes) + " (" + std::to_string(e.node_states) +
                    " node states of ~" + per_node + " model-sized vectors, " + formatBytes(e.data_bytes) +
                    " data) but only " + formatBytes(static_cast<double>(*available)) +
                    " is available (MemAvailable); use fewer nodes or a smaller model");
}

}  // namespace gossip::daemon
