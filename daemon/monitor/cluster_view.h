#pragma once
// /cluster (docs/monitoring.md): the whole cluster as this node knows it, as JSON for the dashboard.
// Members and their states come from this node's membership view; the topology and the mixing weights
// from the graph its engine built for that view (every node with the same view builds the same graph,
// DESIGN.md §5, so there is nothing to gossip); progress from the status gossip (cluster_status.h);
// events from what this node saw (EventLog).
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.h"
#include "daemon/monitor/cluster_status.h"
#include "engine/view.h"
#include "membership/membership.h"

namespace gossip::daemon {

struct ClusterEvent {
  std::int64_t time_ms = 0;  // wall clock
  PeerId node = 0;
  Incarnation incarnation = 0;
  std::string kind;  // joined, suspected, refuted, dead, left, rejoined, state_sent, state_received
  std::string text;
};

// The newest kCapacity events this node saw, oldest first.
class EventLog {
 public:
  static constexpr std::size_t kCapacity = 200;
  void add(ClusterEvent e);
  const std::deque<ClusterEvent>& events() const { return events_; }

 private:
  std::deque<ClusterEvent> events_;
};

// Edges with their weights, self weights and the spectral gap of one view graph; computed once per graph
// (per mixing epoch), not per request.
struct GraphSummary {
  std::uint64_t epoch = 0;
  nlohmann::json edges;        // [{"a":..,"b":..,"weight":..}, ...]
  nlohmann::json selfWeights;  // {"id": w_ii, ...}
  std::optional<double> spectralGap;  // 1 - ||W - 11^T/n||_2; none above kMaxSpectralNodes members
  std::vector<std::pair<PeerId, double>> row;  // this node's neighbours and weights (metrics)
  double selfWeight = 1.0;
};
inline constexpr std::size_t kMaxSpectralNodes = 512;  // a dense eigen-solve stays under ~0.1 s
GraphSummary summarizeGraph(const engine::ViewGraph& vg, PeerId self);

struct ClusterViewInput {
  PeerId self = 0;
  std::int64_t wallMs = 0;
  std::uint64_t nowMs = 0;  // the clock of ClusterStatus::Entry::receivedMs
  std::string algorithm, compressor, topology;
  Round rounds = 0;
  std::vector<peer::MemberInfo> members;
  const GraphSummary* graph = nullptr;  // null before the first view
  const ClusterStatus* status = nullptr;
  const EventLog* events = nullptr;
};
std::string renderClusterJson(const ClusterViewInput& in);

}  // namespace gossip::daemon
