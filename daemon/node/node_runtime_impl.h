#pragma once
// NodeRuntime::Impl, the node's parts and the methods that wire and run them, split over two files by
// job: node_build.cc builds the parts in order (cheap checks first) and rebuilds the engine and the
// membership for a rejoin; node_runtime.cc runs the loop, the work after a round, the status tick, the
// rejoin and the stop. Private to those two files. Each part lives in its own file, which says at its
// top what it owns and which threads touch it:
//   lifecycle.h        the phases (joining, syncing, training, done/stopped) and the work around a round
//   peer_links.h       transport destinations, traffic by peer, membership frames out, frames in routed
//   checkpoint_store.h checkpoint files, and their writes on the background worker (background.h)
//   evaluation.h       periodic test-set evaluations on the background worker
//   node_status.h      one snapshot per status tick -> status.json, /status, /metrics
//   status_gossip.h    the summary table gossiped for /cluster, events, the view graph's summary
//   node_report.h      member events, refused frames and progress in the log
//   trainer_input.h    trainer mode: the bridge and each round's input
//
// Threads (docs/daemon.md, "Threads"). The node thread runs run(). Checkpoint writes and periodic
// evaluations go to the background worker. The membership thread (MembershipRunner,
// daemon/node/membership_runner.h) owns the peer::Membership and calls into PeerLinks (peer_links.h lists
// the fields both threads touch and their guards); of the fields below it reads c, env, id, advertised,
// net and t0, set before it starts and never written after. incarnation is written only in
// rejoinAsNewIncarnation, with the membership thread stopped. The HTTP server's thread calls putLogLevel
// (the loggers' levels are atomics). Everything else here is the node thread's. Lock order: the runner's
// mutex, then PeerLinks' (one at a time), then the transport's own.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "daemon/monitor/http_server.h"
#include "daemon/node/background.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/data_dir_lock.h"
#include "daemon/node/evaluation.h"
#include "daemon/node/join_seeds.h"
#include "daemon/node/lifecycle.h"
#include "daemon/node/membership_runner.h"
#include "daemon/node/model_out.h"
#include "daemon/node/node_report.h"
#include "daemon/node/node_runtime.h"
#include "daemon/node/peer_links.h"
#include "daemon/node/sim_setup.h"
#include "daemon/node/status_gossip.h"
#include "daemon/node/trainer_input.h"
#include "engine/linked_engine.h"
#include "engine/round_driver.h"
#include "transport/peer/peer_transport.h"

namespace gossip::daemon {

namespace detail {
using Clock = std::chrono::steady_clock;
// Set by the SIGTERM/SIGINT handler (installStopSignals), read by the node thread.
const std::atomic<bool>& stopRequested();
// The daemon's defaults for what NodeEnvironment leaves empty (node_build.cc).
NodeEnvironment completed(NodeEnvironment env);
inline void writeTextAtomic(const std::filesystem::path& path, const std::string& text, bool durable = true) {
  writeFileAtomic(path, std::as_bytes(std::span(text)), durable);
}
}  // namespace detail

struct NodeRuntime::Impl {
  using Clock = detail::Clock;
  // Declared in the order they are built; members that others point to come first, so that they go last.
  Config c;
  NodeEnvironment env;  // complete: every member set (detail::completed)
  PeerId id;
  std::filesystem::path dir;
  // Taken before anything in `dir` is read or written, released last (data_dir_lock.h).
  DataDirLock dirLock{createDataDir(dir)};
  Incarnation incarnation = 0;
  std::uint64_t instance = 0;  // this data directory's random id (file `instance`): owns node.id in the cluster
  std::shared_ptr<logging::Loggers> loggers;
  logging::Logger nodeLog = loggers->get("node");
  logging::Logger memberLog = loggers->get("membership");
  Clock::time_point t0 = env.now();
  // Milliseconds since the node was made, on its clock: the time every part of the node is given.
  std::uint64_t nowMs() const {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(env.now() - t0).count());
  }
  std::unique_ptr<SimProblem> problem;
  // The periodic evaluations use the first monitor.eval_test_max test rows (cheap, every eval_every
  // rounds); the last round's model is evaluated once on the whole test set, the number a user of this
  // node's model gets (issue 12: the head alone made single nodes look better or worse than they are).
  std::optional<training::Dataset> evalSet;   // the head, when it is shorter than the whole set
  std::optional<training::Dataset> fullTest;  // the whole test set
  const training::Dataset* periodicSet() const { return evalSet ? &*evalSet : fullTest ? &*fullTest : nullptr; }
  double accuracy = -1;
  std::size_t accuracySamples = 0;  // test rows behind `accuracy`
  // Checkpoint writes and periodic evaluations run here, off the rounds. Drained before the fields its
  // tasks read go (~Impl), before a rejoin, before the final evaluation and before the process ends.
  std::unique_ptr<Background> background = env.background();
  CheckpointStore checkpoints{dir / "checkpoints", c.node.keep_checkpoints, nodeLog};
  std::unique_ptr<CheckpointWriter> checkpointWriter;  // once the newest checkpoint was loaded
  std::unique_ptr<PeriodicEvaluation> evaluation;      // with monitor.eval_every and a test set
  std::unique_ptr<peer::PeerTransport> net;  // env.transport's: a ZmqTransport in the daemon
  std::string advertised;  // what peers connect to: node.advertise, or the bound endpoint (daemon/config/advertise.h)
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<PeerLinks> links;
  std::unique_ptr<StatusGossip> statusGossip;
  std::unique_ptr<TrainerInput> trainer;  // trainer.enable (docs/trainer.md)
  TrainerBridge* bridge = nullptr;        // trainer->bridge(), or none
  std::unique_ptr<engine::LinkedEngine> engine;
  std::unique_ptr<engine::RoundDriver> driver;  // begins and ends the engine's rounds; rebuilt with it
  std::unique_ptr<MembershipRunner> membership;  // its thread started by startMembership() (run(), a rejoin); stopped before the fields it uses go
  std::vector<std::string> extraSeeds;           // members known before a rejoin
  std::string rejoinVia;                         // the member whose side outnumbered ours, tried first
  std::string identity;                          // cluster_identity.h: sent in every Join
  std::string failure;                           // set by failOnDisk: status.json's "failed" and "error"
  std::set<std::pair<PeerId, std::string>> refusalsLogged;  // (node, its identity) refused and logged once
  std::map<std::string, std::uint64_t> joinsRefused;       // by reason, for /metrics
  NodeReport report{c, nodeLog, memberLog};
  Lifecycle life{c, id, nodeLog, *env.stop,
                 {.afterRound = [this](Round done) { afterRound(done); },
                  .finish = [this](NodeState end) { finish(end); }}};
  std::uint64_t nextStatus = 0;

  // ---- node_build.cc: the parts, in order ----
  static const std::filesystem::path& createDataDir(const std::filesystem::path& dir);
  Impl(Config config, std::shared_ptr<logging::Loggers> logs, StartMode start, NodeEnvironment environment);
  void moveRunAside();
  ~Impl();
  HttpServer::Answer putLogLevel(std::string_view query);
  void setupData();
  void readIncarnation();
  void makeEngine();
  void loadNewestCheckpoint();
  void makeMembership();

  // ---- node_runtime.cc: the loop ----
  int run();
  std::optional<int> step();                   // a stepped node's pass: the membership's, then pass()
  std::optional<int> guarded(const std::function<std::optional<int>()>& f);  // run()'s and step()'s error handling
  std::optional<int> pass(std::uint64_t now);  // one pass of the loop; the exit code once stopped
  void startMembership();                      // its thread, unless the node is stepped
  void beginStop(bool checkpointed);  // the last checkpoint, Stopped, the leave announced
  int endStop();                                          // after the leave's 200 ms: drained, status, last line
  std::optional<std::uint64_t> leavingUntil;   // set by beginStop: frames are still taken until then
  std::optional<int> exitCode;                 // a stepped node's, once it stopped
  bool progressed = false;                     // the last pass did work (run() waits only after one that did none)
  void pumpIncoming(std::uint64_t now);
  void onMembership(std::uint64_t now);
  void onRefusals();
  void reportHandshakeFailures();  // from onRefusals
  struct Logged {
    std::uint64_t count = 0;
    Clock::time_point at;   // last logged; epoch: never
    bool specific = false;  // a failure with a cause (not only "no detail") was seen
  };
  std::map<std::string, Logged> handshakeLogged;  // per direction and address
  std::string lastHandshakeFailure;               // the last one of our links logged: added to "no seed answered"
  void checkClusterFile();  // node.data_dir's `cluster` file against this configuration's identity
  void announceLeave();  // beginStop() and failOnDisk(): Stopped, the leave sent
  void waitForFrames(std::chrono::milliseconds timeout);  // run()'s sleep: a trainer's request or a frame
  [[noreturn]] void failOnDisk(const IoError& e);  // logs the Joins we refused; throws RefusedError when a member refused ours
  void afterRound(Round done);
  void finish(NodeState end);
  void checkpoint(Round next);
  void takeAccuracy(std::uint64_t now);
  void writeStatus(std::uint64_t now, bool force);
  std::uint64_t bytesSent() const;
  void rejoinAsNewIncarnation(std::uint64_t now);
};

}  // namespace gossip::daemon
