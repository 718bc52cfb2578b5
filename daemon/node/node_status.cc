#include "daemon/node/node_status.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace gossip::daemon {
namespace {

nlohmann::json finiteOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string renderStatusJson(const NodeStatus& s) {
  const bool evaluated = s.accuracy >= 0;
  nlohmann::json j{{"id", s.id},
                   {"incarnation", s.incarnation},
                   {"state", nodeStateName(s.state)},
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
  m.neighbors = s.neighbors;
  m.links = s.links;
  m.compression_ratio = s.compression_ratio;
  m.model_bytes_sent = s.model_bytes_sent;
  m.retransmitted = s.retransmitted;
  m.messages_missing = s.messages_missing;
  m.rejected_by_reason = s.rejected_by_reason;
  m.suspicions = s.suspicions;
  m.refutations = s.refutations;
  m.deaths = s.deaths;
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
