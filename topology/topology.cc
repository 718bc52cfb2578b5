#include "topology/topology.h"

#include "core/error.h"

namespace gossip::topology {
// Placeholder until the topology work lands.
Graph buildGraph(std::span<const PeerId>, const TopologyParams&) { throw ConfigError("topology: not implemented yet"); }
}  // namespace gossip::topology
