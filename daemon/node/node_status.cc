#include "daemon/node/node_status.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "daemon/bridge/trainer_bridge.h"
#include "daemon/node/lifecycle.h"
#include "daemon/node/membership_runner.h"
#include "daemon/node/node_report.h"
#include "daemon/node/peer_links.h"
#include "daemon/node/status_gossip.h"
#include "engine/linked_engine.h"
#include "transport/peer/peer_transport.h"

namespace gossip::daemon {
namespace {

nlohmann::json finiteOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

NodeStatus collectStatus(const StatusSources& in, std::uint64_t now) {
  const auto& st = in.engine->stats();
  const auto z = in.transport->stats();
  const auto& rec = *in.record;
  NodeStatus s;
  s.id = in.id;
  s.incarnation = in.incarnation;
  s.state = in.state;
  s.isolated = in.isolated;
  s.failure = in.failure;
  if (in.joinsRefused) s.joins_refused = *in.joinsRefused;
  s.endpoint = in.endpoint;
  s.listen = in.transport->endpoint();
  s.round = in.round;
  s.rounds = in.c->algorithm.rounds;
  s.loss = rec.loss;
  s.disagreement = rec.disagreement;
  s.gamma = rec.gamma;
  s.drift_warning = rec.drift.warning();
  s.accuracy = in.accuracy;
  s.accuracy_samples = in.accuracySamples;
  s.alive = in.membership->alive().size();
  s.neighbors = in.engine->links().size();
  s.model_bytes_sent = st.model_bytes_sent;
  s.membership_bytes_sent = in.links->membershipBytes();
  s.status_bytes_sent = in.gossip->bytesSent();
  s.bytes_sent = st.model_bytes_sent + st.control_bytes_sent + s.membership_bytes_sent + s.status_bytes_sent;
  s.membership_messages_sent = in.membership->stats().messages_sent;
  s.retransmitted = st.retransmitted;
  s.messages_missing = st.messages_missing;
  s.states_sent = st.states_sent;
  s.states_received = st.states_received;
  s.compute_seconds = static_cast<double>(st.compute_ns) * 1e-9;
  // Every frame refused anywhere in this node, by reason: the engine's (header, protocol and payload
  // checks), status frames refused by the status gossip, the membership's, and what the transport
  // dropped ("malformed_message": a wrong number of parts).
  auto& r = s.rejected_by_reason;
  r = st.rejected;
  for (const auto& [reason, n] : in.gossip->rejected()) r[reason] += n;
  for (const auto& [reason, n] : in.membership->rejected()) r[reason] += n;
  if (z.malformed_dropped) r["malformed_message"] += z.malformed_dropped;
  if (z.unlisted_key) r["unlisted_key"] += z.unlisted_key;  // connections, not frames
  if (z.wrong_key_for_sender) r["wrong_key_for_sender"] += z.wrong_key_for_sender;
  if (z.inbox_dropped) r["inbox_full"] += z.inbox_dropped;
  if (z.membership_inbox_dropped) r["membership_inbox_full"] += z.membership_inbox_dropped;
  for (const auto& [reason, n] : r) s.rejected += n;
  s.disconnects = z.disconnects;
  s.suspicions = in.report->suspicions();
  s.refutations = in.report->refutations();
  s.deaths = in.report->deaths();
  const auto ms = in.membership->stats();
  s.death_verdicts = {{"contested", ms.verdicts_contested}, {"refused", ms.verdicts_rejected}, {"returned", ms.verdicts_returned}};
  s.last_checkpoint = in.lastCheckpoint;
  if (in.lastCheckpointAt) s.checkpoint_age_seconds = static_cast<double>(now - std::min(now, *in.lastCheckpointAt)) / 1000.0;
  if (in.bridge)
    s.trainer = NodeMetrics::Trainer{in.bridge->stateName(now), in.bridge->stats().rounds_served,
                                     static_cast<double>(in.bridge->stats().copy_ns) * 1e-9};
  s.seconds = static_cast<double>(now) / 1000.0;
  const auto traffic = in.links->traffic();
  for (const auto& [peer, l] : traffic.byPeer)
    if (peer < kSeedIdBase) s.links.push_back({std::to_string(peer), l.sent, l.received});
  PeerLinks::Link unknown = traffic.unknown;  // seed pseudo ids: not a node id
  for (const auto& [peer, l] : traffic.byPeer)
    if (peer >= kSeedIdBase) unknown.sent += l.sent, unknown.received += l.received;
  if (unknown.sent || unknown.received) s.links.push_back({"unknown", unknown.sent, unknown.received});
  const auto dim = static_cast<double>(in.engine->node().algorithm().x().size());
  if (traffic.modelPayloadBytes)
    s.compression_ratio = static_cast<double>(traffic.modelFrames) * dim * 4.0 / static_cast<double>(traffic.modelPayloadBytes);
  for (const auto& mem : in.membership->members()) {
    if (mem.id == in.id) continue;
    MemberSample p;
    p.peer = std::to_string(mem.id);
    p.up = mem.state == peer::MemberState::Alive || mem.state == peer::MemberState::Suspect;
    p.suspect = mem.state == peer::MemberState::Suspect;
    if (auto it = traffic.lastHeardMs.find(mem.id); it != traffic.lastHeardMs.end())
      p.last_heard_seconds = static_cast<double>(now - std::min(now, it->second)) / 1000.0;
    s.members.push_back(std::move(p));
  }
  if (const auto& g = in.gossip->graph()) {
    s.self_weight = g->selfWeight;
    for (const auto& [peer, weight] : g->row) s.mixing_weights.emplace_back(std::to_string(peer), weight);
    s.spectral_gap = g->spectralGap;
  }
  s.round_duration = &rec.durations;
  return s;
}

std::string renderStatusJson(const NodeStatus& s) {
  const bool evaluated = s.accuracy >= 0;
  nlohmann::json j{{"id", s.id},
                   {"incarnation", s.incarnation},
                   {"state", s.failure.empty() ? nodeStateName(s.state) : std::string_view("failed")},
                   {"error", s.failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.failure)},
                   {"isolated", s.isolated},
                   {"endpoint", s.endpoint},
                   {"listen", s.listen},
                   {"round", s.round},
                   {"rounds", s.rounds},
                   {"loss", s.loss},
                   {"disagreement", finiteOrNull(s.disagreement)},
                   {"gamma", finiteOrNull(s.gamma)},
                   {"drift_warning", s.drift_warning.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.drift_warning)},
                   {"accuracy", evaluated ? nlohmann::json(s.accuracy) : nlohmann::json(nullptr)},
                   {"accuracy_samples", evaluated && s.accuracy_samples ? nlohmann::json(s.accuracy_samples) : nlohmann::json(nullptr)},
                   {"alive", s.alive},
                   {"neighbors", s.neighbors},
                   {"bytes_sent", s.bytes_sent},
                   {"model_bytes_sent", s.model_bytes_sent},
                   {"membership_bytes_sent", s.membership_bytes_sent},
                   {"membership_messages_sent", s.membership_messages_sent},
                   {"status_bytes_sent", s.status_bytes_sent},
                   {"retransmitted", s.retransmitted},
                   {"messages_missing", s.messages_missing},
                   {"states_sent", s.states_sent},
                   {"states_received", s.states_received},
                   {"compute_seconds", s.compute_seconds},
                   {"rejected", s.rejected},
                   {"rejected_by_reason", s.rejected_by_reason},
                   {"disconnects", s.disconnects},
                   {"suspicions", s.suspicions},
                   {"refutations", s.refutations},
                   {"deaths", s.deaths},
                   {"death_verdicts", s.death_verdicts},
                   {"last_checkpoint", s.last_checkpoint},
                   {"trainer", s.trainer ? nlohmann::json(s.trainer->state) : nlohmann::json(nullptr)},
                   {"trainer_rounds", s.trainer ? s.trainer->rounds : 0},
                   {"trainer_copy_seconds", s.trainer ? s.trainer->copy_seconds : 0.0},
                   {"seconds", s.seconds}};
  return j.dump() + "\n";
}

NodeMetrics toMetrics(const NodeStatus& s) {
  NodeMetrics m;
  m.id = s.id;
  m.incarnation = s.incarnation;
  m.state = std::string(nodeStateName(s.state));
  m.endpoint = s.endpoint;
  m.round = s.round;
  m.rounds_configured = s.rounds;
  m.train_loss = s.loss;
  if (s.accuracy >= 0) m.test_accuracy = s.accuracy;
  if (std::isfinite(s.disagreement)) m.disagreement = s.disagreement;
  m.drift_warning = !s.drift_warning.empty();
  m.trainer = s.trainer;
  m.alive_members = s.alive;
  m.isolated = s.isolated;
  m.neighbors = s.neighbors;
  m.links = s.links;
  m.compression_ratio = s.compression_ratio;
  m.model_bytes_sent = s.model_bytes_sent;
  m.retransmitted = s.retransmitted;
  m.messages_missing = s.messages_missing;
  m.rejected_by_reason = s.rejected_by_reason;
  m.joins_refused = s.joins_refused;
  m.suspicions = s.suspicions;
  m.refutations = s.refutations;
  m.deaths = s.deaths;
  m.death_verdicts = s.death_verdicts;
  m.disconnects = s.disconnects;
  m.state_transfers_sent = s.states_sent;
  m.state_transfers_received = s.states_received;
  m.members = s.members;
  m.self_weight = s.self_weight;
  m.mixing_weights = s.mixing_weights;
  m.spectral_gap = s.spectral_gap;
  m.round_duration = s.round_duration;
  m.compute_seconds = s.compute_seconds;
  m.checkpoint_age_seconds = s.checkpoint_age_seconds;
  m.last_checkpoint_round = s.last_checkpoint;
  m.uptime_seconds = s.seconds;
  return m;
}

}  // namespace gossip::daemon
