#pragma once
// StatusGossip: the node's part in /cluster (daemon/monitor/cluster_view.h, docs/monitoring.md). It keeps
// the table of node summaries (ClusterStatus), pushes it to a few random live members every second, merges
// the tables members push to it, keeps the event log (members joining, dying, state transfers) and the
// summary of the current view graph (its mixing row and spectral gap, also on /metrics), and rebuilds the
// /cluster page once per status tick. Monitoring only: nothing in training reads any of it.
//
// Threading: node thread only. It reads the membership through MembershipRunner's copies and sends
// through PeerLinks (which count the bytes per peer under their own guard).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "daemon/config/config.h"
#include "daemon/monitor/cluster_status.h"
#include "daemon/monitor/cluster_view.h"
#include "daemon/monitor/http_server.h"
#include "daemon/node/membership_runner.h"
#include "daemon/node/node_status.h"
#include "daemon/node/peer_links.h"
#include "engine/view.h"

namespace gossip::daemon {

class StatusGossip {
 public:
  static constexpr std::uint64_t kPeriodMs = 1000;  // push the summary table this often...
  static constexpr std::size_t kFanout = 2;         // ...to this many random live members

  // http: where /cluster goes (none: no page, the table is still gossiped).
  StatusGossip(const Config& c, PeerId self, PeerLinks& links, HttpServer* http);

  // The membership runner of the node (it outlives this object's use; replaced never, restarted on a rejoin).
  void attach(const MembershipRunner& membership) { membership_ = &membership; }
  void setIncarnation(Incarnation inc) { incarnation_ = inc; }

  // A member's table of node summaries. Refusals are counted in rejected().
  void receive(const engine::RawFrame& f, std::uint64_t now);
  // The push: a few random live members each period.
  void gossip(std::uint64_t now);
  // The view graph's summary, recomputed only when the graph changed (the eigen-solve is O(n^3)).
  void noteViewGraph(std::shared_ptr<const engine::ViewGraph> vg);
  // This node's summary into the table (from the tick's snapshot), events for new state transfers, and
  // /cluster rebuilt.
  void refresh(std::uint64_t now, const NodeStatus& s);
  void noteEvent(PeerId node, Incarnation inc, const char* kind, std::string text);

  const std::optional<GraphSummary>& graph() const { return graphSummary_; }
  std::uint64_t bytesSent() const { return bytesSent_; }
  // Status frames refused, by reason (monitoring rejections are reported with the membership's).
  const std::map<std::string, std::uint64_t>& rejected() const { return rejected_; }

 private:
  const Config& c_;
  const PeerId self_;
  Incarnation incarnation_ = 0;
  PeerLinks& links_;
  HttpServer* http_;
  const MembershipRunner* membership_ = nullptr;
  ClusterStatus table_;
  EventLog events_;
  std::shared_ptr<const engine::ViewGraph> summarizedView_;  // the graph graphSummary_ describes
  std::optional<GraphSummary> graphSummary_;
  std::map<std::string, std::uint64_t> rejected_;
  std::uint64_t nextPush_ = 0, bytesSent_ = 0;
  std::uint64_t statesSentSeen_ = 0, statesReceivedSeen_ = 0;
  Round rateRound_ = 0;
  std::uint64_t rateAt_ = 0;
  double roundsPerSecond_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace gossip::daemon
