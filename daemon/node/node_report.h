#pragma once
// NodeReport: what the node tells its operator in the log, besides its lifecycle: the membership's
// events (one line each, stamped with when the membership thread took them, and counted: suspicions,
// refutations, deaths), the frames it refused (counted always, logged at most once per peer per minute: a
// hostile or broken peer must not flood the log) and the progress line every monitor.progress_every_ms.
//
// Threading: node thread only.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "daemon/monitor/node_state.h"
#include "daemon/node/membership_runner.h"
#include "daemon/node/status_gossip.h"
#include "engine/node_engine.h"

namespace gossip::daemon {

class NodeReport {
 public:
  NodeReport(const Config& c, logging::Logger nodeLog, logging::Logger memberLog);

  // Logs and counts each event, and adds it to /cluster's event log. False when there were none.
  bool memberEvents(const std::vector<StampedEvent>& events, StatusGossip& gossip);
  // Frames refused since the last line, per peer: the first within a second, then once a minute.
  void rejections(std::uint64_t now, const engine::EngineStats& stats);
  void engineReplaced() {  // a new engine counts from zero
    rejectedLogged_.clear();
    nextRejectLogOf_.clear();
  }

  struct Progress {
    Round round = 0;
    double loss = 0, accuracy = -1;
    std::size_t alive = 0, neighbors = 0;
    std::uint64_t bytesSent = 0;  // model, control and membership frames
    NodeState state = NodeState::Joining;
    std::optional<std::string> trainer;  // the bridge's state, trainer mode only
  };
  // Writes the line when it is due; `what` is only called then.
  template <class F>
  void progress(std::uint64_t now, F what) {
    if (now < nextProgress_) return;
    nextProgress_ = now + c_.monitor.progress_every_ms;
    progressLine(what());
  }

  std::uint64_t suspicions() const { return suspicions_; }
  std::uint64_t refutations() const { return refutations_; }
  std::uint64_t deaths() const { return deaths_; }

 private:
  void progressLine(const Progress& p);

  const Config& c_;
  logging::Logger nodeLog_, memberLog_;
  std::uint64_t suspicions_ = 0, refutations_ = 0, deaths_ = 0;
  std::map<PeerId, std::map<std::string, std::uint64_t>> rejectedLogged_;
  std::map<PeerId, std::uint64_t> nextRejectLogOf_;  // per peer: a line at most once a minute
  std::uint64_t nextRejectCheck_ = 0, nextProgress_ = 0;
};

}  // namespace gossip::daemon
