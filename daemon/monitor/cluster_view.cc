#include "daemon/monitor/cluster_view.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "topology/topology.h"

namespace gossip::daemon {

void EventLog::add(ClusterEvent e) {
  if (events_.size() == kCapacity) events_.pop_front();
  events_.push_back(std::move(e));
}

GraphSummary summarizeGraph(const engine::ViewGraph& vg, PeerId self) {
  GraphSummary s;
  s.epoch = vg.epoch;
  const auto& g = vg.graph;
  // Edges and weights row by row (O(edges)): a dense W would need n^2 doubles, 34 GB at the 65,536-member
  // limit. Row b lists the members b mixes from, so an edge a -> b carries w_ba.
  nlohmann::json edges = nlohmann::json::array(), selfw = nlohmann::json::object();
  for (const PeerId b : g.nodes) {
    const auto row = topology::mixingRow(g, b, vg.weights);
    selfw[std::to_string(b)] = row.self;
    for (const auto& [a, w] : row.neighbors)
      if (g.directed || a < b) edges.push_back({{"a", a}, {"b", b}, {"weight", w}});  // undirected: once
    if (b == self) {
      s.row = row.neighbors;
      s.selfWeight = row.self;
    }
  }
  s.edges = std::move(edges);
  s.selfWeights = std::move(selfw);
  if (g.size() >= 2 && g.size() <= kMaxSpectralNodes) s.spectralGap = topology::analyze(topology::mixingMatrix(g, vg.weights)).gap;
  return s;
}

namespace {

const char* memberStateName(peer::MemberState s) {
  switch (s) {
    case peer::MemberState::Alive: return "alive";
    case peer::MemberState::Suspect: return "suspect";
    case peer::MemberState::Dead: return "dead";
    case peer::MemberState::Left: return "left";
  }
  return "unknown";
}

// Summaries travel as floats: printed with the digits a float holds, not as 0.7620000243186951.
nlohmann::json orNull(float v, bool known) {
  if (!known) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
  return std::strtod(buf, nullptr);
}

nlohmann::json statusJson(const ClusterStatus::Entry& e, std::uint64_t nowMs) {
  const auto& s = e.s;
  return {{"round", s.round},
          {"rounds", s.rounds},
          {"state", std::string(nodeStateName(static_cast<NodeState>(s.state)))},
          {"loss", orNull(s.loss, std::isfinite(s.loss))},
          {"accuracy", orNull(s.accuracy, s.accuracy >= 0)},
          {"disagreement", orNull(s.disagreement, std::isfinite(s.disagreement))},
          {"bytes_sent", s.bytes_sent},
          {"compression_ratio", orNull(s.compression_ratio, s.compression_ratio > 0)},
          {"rounds_per_second", orNull(s.rounds_per_second, true)},
          {"neighbors", s.neighbors},
          {"states_sent", s.states_sent},
          {"states_received", s.states_received},
          {"incarnation", s.incarnation},
          {"age_s", static_cast<double>(nowMs - std::min(nowMs, e.receivedMs)) / 1000.0}};
}

}  // namespace

std::string renderClusterJson(const ClusterViewInput& in) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : in.members) {
    const auto* e = in.status ? in.status->find(m.id) : nullptr;
    members.push_back({{"id", m.id},
                       {"incarnation", m.incarnation},
                       {"state", memberStateName(m.state)},
                       {"endpoint", m.endpoint},
                       {"status", e ? statusJson(*e, in.nowMs) : nlohmann::json(nullptr)}});
  }
  nlohmann::json events = nlohmann::json::array();
  if (in.events)
    for (const auto& e : in.events->events())
      events.push_back({{"time_ms", e.time_ms}, {"node", e.node}, {"incarnation", e.incarnation}, {"kind", e.kind}, {"text", e.text}});
  nlohmann::json j{{"self", in.self},
                   {"time_ms", in.wallMs},
                   {"algorithm", in.algorithm},
                   {"compressor", in.compressor},
                   {"topology", in.topology},
                   {"rounds", in.rounds},
                   {"spectral_gap", in.graph && in.graph->spectralGap ? nlohmann::json(*in.graph->spectralGap) : nlohmann::json(nullptr)},
                   {"epoch", in.graph ? in.graph->epoch : 0},
                   {"members", std::move(members)},
                   {"events", std::move(events)}};
  j["edges"] = in.graph ? in.graph->edges : nlohmann::json::array();
  j["self_weights"] = in.graph ? in.graph->selfWeights : nlohmann::json::object();
  return j.dump() + "\n";
}

}  // namespace gossip::daemon
