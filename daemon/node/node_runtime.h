#pragma once
// NodeRuntime: one `gossipd run` process (DESIGN.md §1, §4, §5). It owns the node's data shard, its
// LinkedEngine (the engine's daemon protocol), its transport (ZeroMQ in the daemon; NodeEnvironment says
// what a test gives it instead) and the SWIM membership. The node thread runs the loop
// (membership probes and acks have their own thread, checkpoint writes and periodic evaluations a
// background worker: docs/daemon.md, "Threads"):
//
//   loop: frames in (model frames to the engine, status frames to the status gossip)
//         -> membership events -> view changes to the engine (edges proposed, closed, dropped)
//         -> engine timers (retransmits, proposals) -> begin or end a round when the engine says it can
//         -> after a round: a checkpoint and an evaluation handed to the background worker
//         -> status file and pages, status gossip, progress line
//         -> sleep in zmq_poll until a frame arrives or the next timer is due
//
// The parts live in their own files in daemon/node/ (node_runtime_impl.h lists them).
//
// Life of a node:
//   starting   joins through the seeds; a first-start member of the cluster waits until it knows
//              cluster.nodes members (bounded by cluster.start_timeout_ms) so that the whole cluster
//              starts round 0 with one graph; a restarted node (checkpoint, or incarnation > 0) or a
//              late joiner (id >= cluster.nodes) instead fetches the model and the round from a
//              neighbour (state transfer) and goes on from there.
//   training   rounds; a replica method's round waits for every edge's message or for the failure
//              detector to declare the peer dead; a stateless round waits at most algorithm.round_timeout_ms.
//   finishing  after the last round (or SIGTERM): checkpoint and model written, frames acknowledged,
//              leave announced, exit 0.
// A node that learns it was declared dead (e.g. after SIGSTOP) drops all its edges and goes on as a new
// incarnation: its model carries over, its replicas and duals do not (DESIGN.md §4).
//
// Files in node.data_dir: lock (flock-ed for the daemon's life: a second daemon on the directory is refused,
// data_dir_lock.h), incarnation (the life counter), endpoint (the bound address), status.json
// (rewritten every monitor.status_every_ms), checkpoints/ckpt-<round>.gsc (the newest
// node.keep_checkpoints), model.npy + model.json (the model at every checkpoint and at the end).
//
// Logging (daemon/log/log.h): lines go to the loggers "node" (lifecycle, rounds), "membership" (member
// events), "bridge" and "http"; with an HTTP server on a loopback address, PUT /loglevel changes their
// levels while the node runs (docs/daemon.md#logging).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "daemon/config/config.h"
#include "daemon/log/log.h"

namespace gossip::engine {
class LinkedEngine;
}
namespace gossip::peer {
class PeerTransport;
}
namespace gossip::daemon {

class Background;

// What a node is built from besides its configuration: its network, its clock, the executor of its
// checkpoint writes and evaluations, its stop flag, and whether it has threads of its own. Every member
// left empty is the daemon's: a ZmqTransport on node.listen (CurveZMQ and faults.link_mbit from the
// configuration), steady_clock, one worker thread, the stop signals' flag (installStopSignals), and a
// membership thread. The in-process node test (tests/unit/daemon/test_node_runtime_stepped.cc) gives
// several nodes one in-process network, one fake clock, inline executors and `stepped`, and drives them
// all on its thread with step().
//
// Threads: `transport` and `background` are called on the constructing thread; `now` from the node
// thread, the membership thread (each frame's time) and the background worker (a checkpoint's time), so
// it must be safe to call concurrently unless the node is stepped.
struct NodeEnvironment {
  std::function<std::unique_ptr<peer::PeerTransport>(const Config&)> transport;
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<std::unique_ptr<Background>()> background;
  const std::atomic<bool>* stop = nullptr;
  // No membership thread: step() runs its pass (receive, tick) on the caller's thread, then the node's.
  // Not with node.http or trainer.enable (their threads and waits are the daemon's).
  bool stepped = false;
};

// How a node takes its data directory: Resume continues the run there (or starts one if there is none);
// Fresh (`gossipd run --fresh`) first moves the run there aside, to node.data_dir/previous/<UTC time>/,
// and starts a new one (nothing is deleted; docs/daemon.md, "Starting anew").
enum class StartMode { Resume, Fresh };

class NodeRuntime {
 public:
  // Builds everything and binds the listen address; ConfigError/DataError/IoError on bad input.
  // Without loggers, builds them from config.node (loggerOptions) writing to stdout.
  explicit NodeRuntime(Config config, std::shared_ptr<logging::Loggers> loggers = nullptr,
                       StartMode start = StartMode::Resume, NodeEnvironment env = {});
  ~NodeRuntime();  // without a leave: to the others, a crash (checkpoint writes already begun are finished)
  // Runs until the last round or SIGTERM/SIGINT; returns the process exit code. Not for a stepped node.
  int run();
  // A node built with NodeEnvironment::stepped: one pass of the loop on the caller's thread (the
  // membership's, then the node's), never waiting. The exit code once the node has stopped (the pass that
  // ends the leave's 200 ms on the node's clock; later calls return it again and do nothing); errors as
  // run() throws them (a node that threw is not stepped again).
  std::optional<int> step();
  // For tests of a stepped node, between steps (nothing else runs then): the engine of the node's current
  // life (none if it stopped before a trainer attached), and the round status.json reports (Lifecycle::round).
  const engine::LinkedEngine* engine() const;
  std::uint64_t round() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// node.log_level, node.log_levels and node.log_format, with the node's id on every line.
logging::Options loggerOptions(const NodeConfig& node);

// Installs SIGTERM/SIGINT/SIGHUP handlers that ask every NodeRuntime (its construction's waits and run) to
// stop cleanly. Call before constructing one.
void installStopSignals();

}  // namespace gossip::daemon
