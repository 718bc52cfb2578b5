#include "daemon/node/node_report.h"

#include <string>

namespace gossip::daemon {

NodeReport::NodeReport(const Config& c, logging::Logger nodeLog, logging::Logger memberLog)
    : c_(c), nodeLog_(std::move(nodeLog)), memberLog_(std::move(memberLog)) {}

bool NodeReport::memberEvents(const std::vector<StampedEvent>& events, StatusGossip& gossip) {
  using K = peer::MembershipEvent::Kind;
  for (const auto& [e, stamp] : events) {
    const char* what = e.kind == K::Joined ? "joined" : e.kind == K::Suspected ? "suspected" : e.kind == K::Refuted ? "alive again (refuted)" : e.kind == K::Died ? "declared dead" : "left";
    const char* kind = e.kind == K::Joined ? (e.incarnation > 0 ? "rejoined" : "joined") : e.kind == K::Suspected ? "suspected"
                       : e.kind == K::Refuted ? "refuted" : e.kind == K::Died ? "dead" : "left";
    gossip.noteEvent(e.id, e.incarnation, kind, "member " + std::to_string(e.id) + " (incarnation " + std::to_string(e.incarnation) + ") " + what);
    if (e.kind == K::Suspected) ++suspicions_;
    if (e.kind == K::Refuted) ++refutations_;
    if (e.kind == K::Died) ++deaths_;
    // Wall-clock milliseconds on event lines, from when the membership thread took the event (the node
    // thread may log it seconds later): fault scripts measure detection times across processes.
    memberLog_->info("member {} (incarnation {}) {} [t={}]", e.id, e.incarnation, what, static_cast<long long>(stamp));
  }
  return !events.empty();
}

// A peer's first refused frames are reported within a second, later ones at most once a minute per peer
// (issue 28: the first line came only after 60 s of uptime, so a short run's refusals were never logged).
void NodeReport::rejections(std::uint64_t now, const engine::EngineStats& stats) {
  if (now < nextRejectCheck_) return;
  nextRejectCheck_ = now + 1000;
  for (const auto& [peer, reasons] : stats.rejected_by_peer) {
    if (now < nextRejectLogOf_[peer]) continue;
    std::string what;
    std::uint64_t total = 0;
    for (const auto& [reason, n] : reasons) {
      const std::uint64_t fresh = n - rejectedLogged_[peer][reason];
      if (!fresh) continue;
      total += fresh;
      what += (what.empty() ? "" : ", ") + reason + " " + std::to_string(fresh);
    }
    if (!total) continue;
    nodeLog_->warn("rejected {} frames from peer {} since the last report ({})", total, peer, what);
    rejectedLogged_[peer] = reasons;
    nextRejectLogOf_[peer] = now + 60000;
  }
}

void NodeReport::progressLine(const Progress& p) {
  nodeLog_->info("round {}/{}  loss {:.4f}{}  alive {}  neighbors {}  sent {:.2f} MB  [{}{}]", p.round, c_.algorithm.rounds,
                 p.loss, p.accuracy >= 0 ? fmt::format("  acc {:.1f}%", 100 * p.accuracy) : "", p.alive, p.neighbors,
                 static_cast<double>(p.bytesSent) / 1e6, nodeStateName(p.state), p.trainer ? ", trainer " + *p.trainer : "");
}

}  // namespace gossip::daemon
