#pragma once
// The node's state: where its lifecycle is (daemon/node/lifecycle.h), what status.json's "state" says,
// gossipd_state's label, and the byte status gossip carries (cluster_status.h; the values are on the wire,
// so they never change). One enum and one name function for all of them.
#include <cstdint>
#include <string_view>

namespace gossip::daemon {

enum class NodeState : std::uint8_t {
  Joining = 0,   // joining through the seeds, waiting for the cluster to start
  Syncing = 1,   // asking a neighbour for the model and round (a restart, a late joiner, a rejoin)
  Training = 2,  // rounds
  Stopped = 3,   // SIGTERM/SIGINT: finishing (or gone) before the last round
  Done = 4,      // the last round is done: finishing (or gone)
};
inline constexpr std::uint8_t kMaxNodeState = 4;

// "joining", "syncing", "training", "stopped", "done"; "unknown" for a value out of range (a byte off
// the wire before it was checked).
constexpr std::string_view nodeStateName(NodeState s) {
  switch (s) {
    case NodeState::Joining: return "joining";
    case NodeState::Syncing: return "syncing";
    case NodeState::Training: return "training";
    case NodeState::Stopped: return "stopped";
    case NodeState::Done: return "done";
  }
  return "unknown";
}

// After the rounds: the node only waits for its last frames to be acknowledged, then leaves.
constexpr bool finished(NodeState s) { return s == NodeState::Stopped || s == NodeState::Done; }

}  // namespace gossip::daemon
