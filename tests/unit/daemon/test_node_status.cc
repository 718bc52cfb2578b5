// daemon/node/node_status.h: one snapshot rendered to status.json (the keys docs/daemon.md lists and the
// integration tests read, with null for what is not known) and to /metrics (the same numbers), and the
// node state's one set of names (daemon/monitor/node_state.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/monitor/metrics.h"
#include "daemon/monitor/node_state.h"
#include "daemon/node/node_status.h"

using namespace gossip;
using namespace gossip::daemon;

namespace {

NodeStatus example(const Histogram* h) {
  NodeStatus s;
  s.id = 3;
  s.incarnation = 2;
  s.state = NodeState::Training;
  s.isolated = true;
  s.endpoint = "tcp://10.0.0.3:7000";
  s.listen = "tcp://0.0.0.0:7000";
  s.round = 42;
  s.rounds = 100;
  s.loss = 0.25;
  s.disagreement = 0.5;
  s.accuracy = 0.8;
  s.accuracy_samples = 500;
  s.alive = 4;
  s.neighbors = 2;
  s.model_bytes_sent = 1000;
  s.membership_bytes_sent = 70;
  s.membership_messages_sent = 7;
  s.status_bytes_sent = 30;
  s.bytes_sent = 1234;
  s.retransmitted = 5;
  s.messages_missing = 6;
  s.states_sent = 1;
  s.states_received = 2;
  s.compute_seconds = 1.5;
  s.rejected_by_reason = {{"bad_checksum", 2}, {"status_not_member", 1}};
  s.rejected = 3;
  s.disconnects = 8;
  s.suspicions = 9;
  s.refutations = 10;
  s.deaths = 11;
  s.death_verdicts = {{"contested", 3}, {"refused", 2}, {"returned", 1}};
  s.last_checkpoint = 40;
  s.checkpoint_age_seconds = 2.5;
  s.seconds = 12.5;
  s.links = {{"1", 100, 200}, {"unknown", 5, 0}};
  s.compression_ratio = 4.0;
  s.members = {{"1", true, false, 0.25}, {"2", true, true, std::nullopt}};
  s.self_weight = 0.5;
  s.mixing_weights = {{"1", 0.25}, {"2", 0.25}};
  s.spectral_gap = 0.3;
  s.round_duration = h;
  return s;
}

// The value of the one sample of `name` (no labels) in a /metrics page.
std::string sample(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  REQUIRE_MESSAGE(at != std::string::npos, name);
  const auto start = at + name.size() + 2;
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

TEST_CASE("node state names: the strings status.json - gossipd_state and /cluster use - one per state") {
  CHECK(nodeStateName(NodeState::Joining) == "joining");
  CHECK(nodeStateName(NodeState::Syncing) == "syncing");
  CHECK(nodeStateName(NodeState::Training) == "training");
  CHECK(nodeStateName(NodeState::Stopped) == "stopped");
  CHECK(nodeStateName(NodeState::Done) == "done");
  CHECK(nodeStateName(static_cast<NodeState>(kMaxNodeState + 1)) == "unknown");
  // Every state has a gossipd_state series and the same names in the same order.
  REQUIRE(std::size(kNodeStates) == kMaxNodeState + 1u);
  for (std::uint8_t k = 0; k <= kMaxNodeState; ++k) CHECK(kNodeStates[k] == nodeStateName(static_cast<NodeState>(k)));
  // The wire values status gossip carries never change.
  CHECK(static_cast<int>(NodeState::Joining) == 0);
  CHECK(static_cast<int>(NodeState::Done) == 4);
  CHECK(finished(NodeState::Done));
  CHECK(finished(NodeState::Stopped));
  CHECK(!finished(NodeState::Training));
  CHECK(!finished(NodeState::Joining));
}

TEST_CASE("status.json: every key - with the snapshot's values") {
  const auto j = nlohmann::json::parse(renderStatusJson(example(nullptr)));
  const std::set<std::string> want{
      "id", "incarnation", "state", "error", "isolated", "endpoint", "listen", "round", "rounds", "loss", "disagreement", "gamma",
      "drift_warning", "accuracy", "accuracy_samples", "alive", "neighbors", "bytes_sent", "model_bytes_sent",
      "membership_bytes_sent", "membership_messages_sent", "status_bytes_sent", "retransmitted", "messages_missing",
      "states_sent", "states_received", "compute_seconds", "rejected", "rejected_by_reason", "disconnects",
      "suspicions", "refutations", "deaths", "death_verdicts", "last_checkpoint", "trainer", "trainer_rounds", "trainer_copy_seconds",
      "seconds"};
  std::set<std::string> got;
  for (const auto& [k, v] : j.items()) got.insert(k);
  CHECK(got == want);
  CHECK(j["id"] == 3);
  CHECK(j["incarnation"] == 2);
  CHECK(j["state"] == "training");
  CHECK(j["isolated"] == true);
  CHECK(j["endpoint"] == "tcp://10.0.0.3:7000");
  CHECK(j["listen"] == "tcp://0.0.0.0:7000");
  CHECK(j["round"] == 42);
  CHECK(j["loss"] == 0.25);
  CHECK(j["disagreement"] == 0.5);
  CHECK(j["gamma"].is_null());
  CHECK(j["drift_warning"].is_null());
  CHECK(j["accuracy"] == 0.8);
  CHECK(j["accuracy_samples"] == 500);
  CHECK(j["bytes_sent"] == 1234);
  CHECK(j["rejected"] == 3);
  CHECK(j["rejected_by_reason"]["bad_checksum"] == 2);
  CHECK(j["last_checkpoint"] == 40);
  CHECK(j["trainer"].is_null());
  CHECK(j["trainer_rounds"] == 0);
  CHECK(j["seconds"] == 12.5);
}

TEST_CASE("status.json: what is not known is null - a trainer's state when there is one") {
  NodeStatus s = example(nullptr);
  s.disagreement = std::numeric_limits<double>::quiet_NaN();
  s.accuracy = -1;
  s.gamma = 0.125;
  s.drift_warning = "disagreement grew";
  s.trainer = NodeMetrics::Trainer{"attached", 17, 0.5};
  auto j = nlohmann::json::parse(renderStatusJson(s));
  CHECK(j["disagreement"].is_null());
  CHECK(j["accuracy"].is_null());
  CHECK(j["accuracy_samples"].is_null());
  CHECK(j["gamma"] == 0.125);
  CHECK(j["drift_warning"] == "disagreement grew");
  CHECK(j["trainer"] == "attached");
  CHECK(j["trainer_rounds"] == 17);
  CHECK(j["trainer_copy_seconds"] == 0.5);
  s.accuracy = 0.5;
  s.accuracy_samples = 0;  // a trainer's accuracy: the size of its test set is not known
  j = nlohmann::json::parse(renderStatusJson(s));
  CHECK(j["accuracy"] == 0.5);
  CHECK(j["accuracy_samples"].is_null());
  CHECK(renderStatusJson(s).back() == '\n');
}

TEST_CASE("/metrics from the same snapshot shows the same numbers") {
  Histogram h(std::vector<double>(std::begin(kRoundDurationBuckets), std::end(kRoundDurationBuckets)));
  h.observe(0.01);
  const NodeStatus s = example(&h);
  const NodeMetrics m = toMetrics(s);
  CHECK(m.state == "training");
  CHECK(m.round == 42);
  CHECK(m.rounds_configured == 100);
  CHECK(m.test_accuracy == 0.8);
  CHECK(m.disagreement == 0.5);
  CHECK(m.last_checkpoint_round == 40);
  CHECK(m.checkpoint_age_seconds == 2.5);
  CHECK(m.uptime_seconds == 12.5);
  CHECK(m.round_duration == &h);
  CHECK(m.members.size() == 2);
  const std::string text = renderMetrics(m);
  CHECK(sample(text, "gossipd_round") == "42");
  CHECK(sample(text, "gossipd_last_checkpoint_round") == "40");
  CHECK(sample(text, "gossipd_checkpoint_age_seconds") == "2.5");
  CHECK(sample(text, "gossipd_suspicions_total") == "9");
  CHECK(sample(text, "gossipd_deaths_total") == "11");
  CHECK(text.find("gossipd_death_verdicts_total{outcome=\"refused\"} 2\n") != std::string::npos);
  CHECK(text.find("gossipd_death_verdicts_total{outcome=\"returned\"} 1\n") != std::string::npos);
  CHECK(text.find("gossipd_state{state=\"training\"} 1") != std::string::npos);
  CHECK(text.find("gossipd_rejected_messages_total{reason=\"bad_checksum\"} 2") != std::string::npos);

  NodeStatus fresh = example(&h);
  fresh.accuracy = -1;
  fresh.disagreement = std::numeric_limits<double>::quiet_NaN();
  fresh.checkpoint_age_seconds.reset();
  const NodeMetrics f = toMetrics(fresh);
  CHECK(!f.test_accuracy);
  CHECK(!f.disagreement);
  CHECK(renderMetrics(f).find("gossipd_checkpoint_age_seconds") == std::string::npos);
}
