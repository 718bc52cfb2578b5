#pragma once
// Identifiers shared by every module. Plain integers on purpose: they go on the wire and into JSON.
#include <cstdint>

namespace gossip {
using PeerId = std::uint32_t;       // stable node id (config or launcher assigned)
using Round = std::uint64_t;        // synchronous round counter, starts at 0
using Incarnation = std::uint64_t;  // bumped on every restart of a node, so its edges become new edges
}  // namespace gossip
