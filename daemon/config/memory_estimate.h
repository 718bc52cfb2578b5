#pragma once
// A rough upper estimate of the memory a `sim` run needs, checked against MemAvailable before any large
// allocation: a config with a million nodes (or a join of node 999999, which cuts the data into a million
// shards) must fail in one line instead of growing until the kernel kills the process.
//
// Counted per node in vectors of d values of the state's type (core/real.h; docs/algorithms.md lists them
// per method): the method's own vectors and the gradient, the per-neighbour ones of the replica and exact
// methods (average degree of the topology), error-feedback and estimator memory (LSVRG reference, SAGA
// table); the engine's messages (one per neighbour and two outgoing, each the codec's size); a fixed 4 KiB;
// plus the data, in bytes.
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
  double vectors_per_node = 0;    // d-sized state vectors per node
  double per_node_bytes = 0;      // one node's state, messages and bookkeeping
  double average_degree = 0;
};

// dim: model parameters; samples_per_node: local samples (for SAGA's table); message_bytes: one encoded
// message (Compressor::encodedBytes(dim)); data_bytes: the data, in bytes.
MemoryEstimate estimateSimMemory(const Config& c, std::size_t dim, double samples_per_node, double message_bytes,
                                 double data_bytes);

// MemAvailable from /proc/meminfo in bytes; nullopt when it cannot be read (non-Linux).
std::optional<std::uint64_t> memAvailableBytes();

// Throws ConfigError naming cluster.nodes (or the faults.join entry that sets the shard count) with the
// estimate and the available memory when the estimate exceeds `available`. No check without `available`.
void checkSimMemory(const Config& c, const MemoryEstimate& e, std::optional<std::uint64_t> available);

// "1.5 GB" style, for messages.
std::string formatBytes(double bytes);

}  // namespace gossip::daemon
