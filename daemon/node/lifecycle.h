#pragma once
// Lifecycle: the node's phases (daemon/node/node_runtime.h, "Life of a node"; docs/daemon.md):
//
//   Joining ──(cluster.nodes members known, or start_timeout; a first start)──────────> Training
//      │ (a restart, a late joiner, a rejoin: ask a neighbour for the model and round)      │
//      └──> Syncing ──(state received, or 5 s)──────────────────────────────────────────────┤
//                                                         (last round, or SIGTERM) ─> Done | Stopped
//   Done | Stopped: the last checkpoint is written, the node waits until its last frames are acknowledged
//   (or a deadline), then leaves. A SIGTERM while joining or syncing leaves at once.
//
// The state is one NodeState (daemon/monitor/node_state.h): the same value names the phase, status.json's
// "state", gossipd_state's label and the byte status gossip carries.
//
// The lifecycle decides; the runtime owns and wires the parts (the engine and its round driver, the
// membership runner, the trainer) and does the work it asks for through Hooks (evaluations and
// checkpoints after a round, the last checkpoint). A rejoin rebuilds the engine, which is wiring: the
// runtime takes the node's state out of the old engine (LifeCarry::takeFrom), builds the new one, puts the
// state in (putInto) and calls rejoined() here, then attach() with the new parts.
//
// Threading: node thread only. The stop flag is an atomic set by the signal handler.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "core/bytes.h"
#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "daemon/monitor/drift_watch.h"
#include "daemon/monitor/metrics.h"
#include "daemon/monitor/node_state.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/membership_view.h"
#include "daemon/node/trainer_input.h"
#include "engine/linked_engine.h"
#include "engine/round_driver.h"

namespace gossip::daemon {

// What the node's rounds left behind, for status and progress lines.
struct RoundRecord {
  double loss = 0;
  double disagreement = std::numeric_limits<double>::quiet_NaN();  // NaN until a round mixed
  double gamma = std::numeric_limits<double>::quiet_NaN();  // CHOCO's consensus step after the last round (algorithms/choco.h)
  DriftWatch drift;  // warns once when this node's disagreement keeps growing (daemon/monitor/drift_watch.h)
  Histogram durations{std::vector<double>(std::begin(kRoundDurationBuckets), std::end(kRoundDurationBuckets))};
};

// What a node keeps from one life to the next after a death verdict: its algorithm's state as between
// two rounds, and the round the new life continues at (the round being mixed, if one was begun: it is
// abandoned with the old engine). The runtime and the in-process node test both rejoin through these, so
// the test runs the daemon's steps rather than a copy of them.
struct LifeCarry {
  Bytes state;
  Round next = 0;

  static LifeCarry takeFrom(engine::LinkedEngine& old);
  // Into the new life's engine, with no edges: the old life's neighbours drop theirs when they see the new
  // incarnation (the same as a restart from a checkpoint).
  void putInto(engine::LinkedEngine& fresh) const;
};

// A restart's start: the newest checkpoint in `store` that this node can load goes into `engine`
// (CheckpointStore::loadNewest), the newer files it could not load are set aside (setAsideSkipped), and
// the previous life's edges are dropped (its neighbours drop theirs when they see the new incarnation; the
// dual shares go with them). Returns the round it continues at, none without checkpoints. A finished run
// (newest checkpoint at `rounds` or beyond) is refused with RefusedError and left as it is: its nodes
// would start at the last round, take a neighbour's model by state transfer and rewrite their final
// models (issue 28: `gossipd cluster` run twice on one directory left nodes' model.npy byte-identical to
// node 1's, with exit 0). The daemon (node_build.cc) and the in-process node test start this way.
std::optional<Round> resumeFromNewest(CheckpointStore& store, engine::LinkedEngine& engine, PeerId id, Round rounds,
                                      const std::filesystem::path& dataDir);

class Lifecycle {
 public:
  // The parts it drives, owned by the runtime; set again after a rejoin replaced the engine and driver.
  struct Parts {
    engine::LinkedEngine* engine = nullptr;
    engine::RoundDriver* driver = nullptr;
    const MembershipView* membership = nullptr;  // the daemon's MembershipRunner
    TrainerInput* trainer = nullptr;  // trainer.enable only
    Incarnation incarnation = 0;
  };
  struct Hooks {
    std::function<void(Round done)> afterRound;  // evaluation, checkpoint every so many rounds
    std::function<void(NodeState end)> finish;   // Done or Stopped: the last evaluation and checkpoint
  };
  enum class Outcome {
    Continue,
    Stop,      // leave now (a stop signal before training, or a round that would not end)
    Finished,  // the last checkpoint is written and the neighbours acknowledged: leave
  };

  Lifecycle(const Config& c, PeerId id, logging::Logger log, const std::atomic<bool>& stop, Hooks hooks);
  void attach(const Parts& parts) { p_ = parts; }

  // A checkpoint was loaded: the node continues at `next` once it has synced.
  void resumeAt(Round next);
  // Declared dead, now a new life (the runtime rebuilt the engine): join again, keeping `next` (the
  // lower of it and the neighbour's round is taken when syncing).
  void rejoined(Round next, std::uint64_t now);

  // One pass of the node's loop: the engine's timers, then the phase's step.
  Outcome step(std::uint64_t now);
  // Membership's view changed: the engine takes it, except while joining (it gets its first view when the
  // node starts) and once done or stopped (no new edges for a node that will not mix any more; dead peers'
  // frames are released when it leaves). Returns whether the engine took it.
  bool viewChanged(std::uint64_t now);
  // The node is leaving before Done: Stopped.
  void markStopped() {
    if (state_ != NodeState::Done) state_ = NodeState::Stopped;
  }

  NodeState state() const { return state_; }
  // Training, but every other member is dead: rounds are held until one is back (lifecycle.cc).
  bool isolated() const { return isolated_; }
  bool resumed() const { return resumed_; }
  Round resumeRound() const { return resumeRound_; }
  // The node's round as the outside sees it (status.json, /metrics, progress lines, the trainer's g.round).
  // While a resumed or rejoined node joins or syncs, its engine is new and says 0 until the state transfer;
  // its round is then the one it resumes at (a status that read 0 there went 200 -> 0 -> 399).
  Round round() const {
    const Round engine = p_.engine ? p_.engine->nextRound() : 0;
    const bool waiting = state_ == NodeState::Joining || state_ == NodeState::Syncing;
    return waiting && resumed_ ? std::max(engine, resumeRound_) : engine;
  }
  const RoundRecord& record() const { return record_; }
  // Whether a round began or ended since the last call: the loop then goes round again at once instead of
  // sleeping (sleeping there cost up to the poll period, 2 ms, per round).
  bool takeProgress() { return std::exchange(progressed_, false); }

 private:
  bool lateStarter() const;
  void startTraining(Round first, std::uint64_t now);
  void stepJoining(std::uint64_t now);
  void waitForSeeds(std::uint64_t now);
  void stepSyncing(std::uint64_t now);
  bool stepTraining(std::uint64_t now);
  void beginFinishing(std::uint64_t now);

  const Config& c_;
  const PeerId id_;
  logging::Logger log_;
  const std::atomic<bool>& stop_;
  Hooks hooks_;
  Parts p_;
  NodeState state_ = NodeState::Joining;
  std::uint64_t since_ = 0;       // when the phase began (ms)
  bool stepped_ = false;          // the first step() set since_: the join begins there, not at construction
  std::uint64_t stateAskedAt_ = 0;  // when the view's neighbours were last added as sources of the fetch
  std::uint64_t stateLoggedAt_ = 0;  // the last progress line of a state transfer
  bool resumed_ = false;          // loaded a checkpoint (or rejoined)
  bool rejoined_ = false;         // declared dead while running on, now a new incarnation
  Round resumeRound_ = 0;
  std::uint64_t finishDeadline_ = 0;
  std::uint64_t stopAt_ = 0;      // when the stop signal was first seen (ms)
  bool progressed_ = false;
  bool isolated_ = false;
  std::optional<Bytes> ownState_;  // a resumed node's checkpointed state while it syncs (stepJoining)
  bool everJoined_ = false;             // some member answered a Join of this process
  std::uint64_t unansweredLogged_ = 0;  // join attempts reported as unanswered
  std::chrono::steady_clock::time_point roundBeganAt_{};
  RoundRecord record_;
};

}  // namespace gossip::daemon
