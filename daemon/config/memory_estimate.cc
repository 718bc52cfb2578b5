#include "daemon/config/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/real.h"
#include "topology/topology.h"

namespace gossip::daemon {
namespace {

// d-sized vectors of the state's type a node keeps in a sim run (gradient mode), from docs/algorithms.md
// "Precision and memory": the method's own vectors and Node's gradient. Per-neighbour vectors are in
// perNeighbourVectors. Measured (docs/results.md, "100,000 simulated nodes"): DeepSqueeze top-1% on
// Fashion-MNIST softmax, 127.6 KiB per node against 4 vectors of 7,850 floats (122.7 KiB) + messages.
// DeepSqueeze with a sparse codec mixes on x in place (algorithms/stateless.cc): no next x, but d bits
// to find repeated indices and the round's supports with x's values there (~ a message per sender).
bool mixesInPlace(const Config& c) {
  if (c.algorithm.name != "deepsqueeze") return false;
  try {
    return compress::makeCompressor(c.compressor)->sparse();
  } catch (const ConfigError&) {
    return false;  // a compressor the validation refuses (and reports); the estimate only has to not fail
  }
}

// The fp32 codec: with float32 state its message is x's own values, which D-PSGD and the primal-dual family
// mix without a vector aside.
bool fp32Codec(const Config& c) { return c.compressor.name == "fp32" || c.compressor.name == "identity"; }

double baseVectors(const Config& c) {
  const std::string& a = c.algorithm.name;
  if (a == "dpsgd") {  // x and g; fp32 with float32 state mixes in place, the others build the next x aside
    return fp32Codec(c) && !kRealIsDouble ? 2 : fp32Codec(c) ? 3 : 4;  // + C(x_i) for a lossy codec
  }
  if (a == "deepsqueeze")  // x, error memory, g (+ m, x aside); a dense codec's mix adds the next x
    return (mixesInPlace(c) ? 3 + 1.0 / (8 * sizeof(Real)) : 4) + (c.compressor_beta < 1.0 ? 2 : 0);
  if (a == "choco") return 4;        // x, x_hat, scratch, g
  if (a == "lsgd") return 5;         // + the leader's decoded model
  if (a == "codistill") return 4;    // x, x_hat, gradient, scratch
  // lead, prox_lead, nids, ed: x, d, h, g; with a codec other than fp32 (or float64 state) also y_hat, a scratch
  // vector and the mixed difference (algorithms/primal_dual_fp32.h: the fp32 path keeps them as blocks)
  return fp32Codec(c) && !kRealIsDouble ? 4 : 7;
}

// d-sized vectors kept per neighbour: CHOCO's replica x_hat_j; the exact methods' h_j and e_ij.
double perNeighbourVectors(const std::string& a) {
  if (a == "choco") return 1;
  if (a == "lead" || a == "prox_lead" || a == "nids" || a == "ed") return 2;
  return 0;
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

MemoryEstimate estimateSimMemory(const Config& c, std::size_t dim, double samples_per_node, double message_bytes,
                                 double data_bytes) {
  MemoryEstimate e;
  std::uint64_t max_id = c.cluster.nodes - 1;
  for (const auto& j : c.faults.join) max_id = std::max<std::uint64_t>(max_id, j.node);
  e.shards = max_id + 1;
  e.node_states = c.cluster.nodes + c.faults.join.size();
  e.average_degree = averageDegree(c.cluster, static_cast<double>(c.cluster.nodes + c.faults.join.size()));
  double vectors = baseVectors(c) + perNeighbourVectors(c.algorithm.name) * e.average_degree;
  if (c.algorithm.name == "lsgd" && c.algorithm.leader_base == "deepsqueeze") vectors += 1;  // its error memory
  if (c.algorithm.name != "deepsqueeze" && c.compressor_beta < 1.0) vectors += 1;  // error-feedback memory
  const auto& est = c.algorithm.estimator;
  if (est == "lsvrg") vectors += 2;  // reference point and its full gradient
  if (c.algorithm.final_consensus_rounds > 0) vectors += 2;  // Node's own copy and the mix's accumulator
  e.vectors_per_node = vectors;
  const double d = static_cast<double>(dim);
  const double value = sizeof(Real);
  double per_node = vectors * d * value;
  // The engine's messages: one received per neighbour, the round's outgoing one and the last round's.
  per_node += (e.average_degree + 2.0) * message_bytes;
  if (mixesInPlace(c)) per_node += (e.average_degree + 1.0) * message_bytes;
  if (est == "saga") {
    // Linear models (logistic, least squares) keep one scalar per sample; the others a gradient per sample.
    const bool scalar = c.model.kind == "logistic" || c.model.kind == "least_squares";
    per_node += samples_per_node * (scalar ? value : d * value) + d * value;
  }
  per_node += 4096;  // node object, engine maps, RNG, estimator's rows and codec bookkeeping
  e.per_node_bytes = per_node;
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
