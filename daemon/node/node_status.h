#pragma once
// NodeStatus: one immutable snapshot of a node, taken once per status tick (monitor.status_every_ms) and
// rendered three ways: status.json and /status (renderStatusJson) and /metrics (toMetrics, then
// daemon/monitor/metrics.h). One snapshot means the three never disagree and every number is computed
// once (the frames refused by reason, the traffic copy, the member list). The JSON keys and the metric
// names are an interface: docs/daemon.md and docs/monitoring.md list them and the tests read them.
//
// Threading: built on the node thread (collectStatus reads the engine, the runner's copies and the
// traffic under their guards); the snapshot is a value and may then go anywhere. The renderers are pure.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "daemon/config/config.h"
#include "daemon/monitor/metrics.h"
#include "daemon/monitor/node_state.h"

namespace gossip::engine {
class LinkedEngine;
}
namespace gossip::peer {
class PeerTransport;
}
namespace gossip::daemon {

class MembershipRunner;
class NodeReport;
class PeerLinks;
class StatusGossip;
class TrainerBridge;
struct RoundRecord;

struct NodeStatus {
  PeerId id = 0;
  Incarnation incarnation = 0;
  NodeState state = NodeState::Joining;
  bool isolated = false;  // training, but every other member is dead: rounds held (Lifecycle::isolated)
  // Why the node is ending on an error (a full disk: NodeRuntime's failOnDisk); empty otherwise. Shown as
  // state "failed" with this "error" in status.json, so `gossipd health` and a supervisor tell a failure
  // from a deliberate stop (issue 28). The wire's state byte stays Stopped (NodeState has no failed: peers
  // only need to know the node is leaving).
  std::string failure;
  std::string endpoint;  // advertised
  std::string listen;    // bound
  Round round = 0;       // the next round
  Round rounds = 0;      // algorithm.rounds
  double loss = 0;
  double disagreement = std::numeric_limits<double>::quiet_NaN();  // NaN: no round mixed yet
  double gamma = std::numeric_limits<double>::quiet_NaN();         // NaN: not CHOCO
  std::string drift_warning;                                       // empty: none
  double accuracy = -1;                                            // < 0: not evaluated
  std::size_t accuracy_samples = 0;                                // 0: not known (a trainer's)
  std::uint64_t alive = 0;
  std::uint64_t neighbors = 0;
  std::uint64_t bytes_sent = 0;  // model + control + membership + status
  std::uint64_t model_bytes_sent = 0;
  std::uint64_t membership_bytes_sent = 0;
  std::uint64_t membership_messages_sent = 0;
  std::uint64_t status_bytes_sent = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t messages_missing = 0;
  std::uint64_t states_sent = 0;
  std::uint64_t states_received = 0;
  double compute_seconds = 0;
  std::map<std::string, std::uint64_t> rejected_by_reason;  // every frame refused in this node
  std::map<std::string, std::uint64_t> joins_refused;       // Joins refused, by reason (/metrics only)
  std::uint64_t rejected = 0;                               // their total
  std::uint64_t disconnects = 0;
  std::uint64_t suspicions = 0, refutations = 0, deaths = 0;
  // Dead verdicts on this node's own life (membership.h, "Contested verdicts"): contested (answered with a
  // Join to the accuser), refused (our camp outnumbered the accuser's side) and returned (the accuser,
  // live here until then, declared dead by us so that it rejoins). Refusals that keep growing mean some
  // member's view is not ours.
  std::map<std::string, std::uint64_t> death_verdicts;
  Round last_checkpoint = 0;                    // the newest checkpoint on disk (0: none by this process)
  std::optional<double> checkpoint_age_seconds;  // none before this process wrote one
  std::optional<NodeMetrics::Trainer> trainer;   // trainer.enable only
  double seconds = 0;                            // the node's age
  // /metrics only.
  std::vector<LinkTraffic> links;
  std::optional<double> compression_ratio;
  std::vector<MemberSample> members;
  std::optional<double> self_weight;
  std::vector<std::pair<std::string, double>> mixing_weights;
  std::optional<double> spectral_gap;
  const Histogram* round_duration = nullptr;  // the node's; valid while the node is
};

// What a snapshot is taken from: the node's parts, owned by NodeRuntime (all set but bridge, which is
// trainer mode's).
struct StatusSources {
  const Config* c = nullptr;
  PeerId id = 0;
  Incarnation incarnation = 0;
  NodeState state = NodeState::Joining;
  Round round = 0;  // Lifecycle::round(): a resumed node's round while it syncs, not its new engine's 0
  bool isolated = false;
  std::string failure;  // NodeStatus::failure
  std::string endpoint;
  const engine::LinkedEngine* engine = nullptr;
  const MembershipRunner* membership = nullptr;
  const peer::PeerTransport* transport = nullptr;
  const PeerLinks* links = nullptr;
  const StatusGossip* gossip = nullptr;
  const RoundRecord* record = nullptr;
  const NodeReport* report = nullptr;
  const TrainerBridge* bridge = nullptr;
  double accuracy = -1;
  std::size_t accuracySamples = 0;
  Round lastCheckpoint = 0;                     // what the checkpoint writer last finished
  const std::map<std::string, std::uint64_t>* joinsRefused = nullptr;
  std::optional<std::uint64_t> lastCheckpointAt;
};
NodeStatus collectStatus(const StatusSources& in, std::uint64_t now);

// status.json and /status: one JSON object and a newline.
std::string renderStatusJson(const NodeStatus& s);
// /metrics' input (renderMetrics).
NodeMetrics toMetrics(const NodeStatus& s);

}  // namespace gossip::daemon
