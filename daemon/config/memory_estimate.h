#pragma once
// A rough upper estimate of the memory a `sim` run needs, checked against MemAvailable before any large
// allocation: a config with a million nodes (or a join of node 999999, which cuts the data into a million
// shards) must fail in one line instead of growing until the kernel kills the process.
//
// Counted in doubles of the model dimension d per node: the algorithm's own vectors (x, gradient, duals,
// references), one replica/received payload per neighbour (average degree of the topology), error-feedback
// memory, and the estimator's memory (LSVRG reference, SAGA table); plus data that is still to be
// generated (synthetic), in bytes.
#include <cstdint>
#include <optional>
#include <string>

#include "daemon/config/config.h"

namespace gossip::daemon {

struct MemoryEstimate {
  double bytes = 0;          // total
  double state_bytes = 0;    // node states (vectors, replicas, estimator memory)
  double data_bytes = 0;     // data still to be allocated
  std::uint64_t node_states = 0;  // nodes that hold a state at some point (initial + joins)
  std::uint64_t shards = 0;       // data shards (largest node id + 1)
  double vectors_per_node = 0;    // d-sized double vectors per node
  double average_degree = 0;
};

// dim: model parameters; samples_per_node: local samples (for SAGA's table); classes: 0 for regression;
// data_bytes: bytes of data not yet allocated (0 when the data is already loaded).
MemoryEstimate estimateSimMemory(const Config& c, std::size_t dim, double samples_per_node, int classes,
                                 double data_bytes);

// MemAvailable from /proc/meminfo in bytes; nullopt when it cannot be read (non-Linux).
std::optional<std::uint64_t> memAvailableBytes();

// Throws ConfigError naming cluster.nodes (or the faults.join entry that sets the shard count) with the
// estimate and the available memory when the estimate exceeds `available`. No check without `available`.
void checkSimMemory(const Config& c, const MemoryEstimate& e, std::optional<std::uint64_t> available);

// "1.5 GB" style, for messages.
std::string formatBytes(double bytes);

}  // namespace gossip::daemon
