// Whole NodeRuntimes - what `gossipd run` builds, node_build.cc and node_runtime.cc as they are - stepped on
// the test's one thread (issue 27, "the node is testable in-process"). Each node is built from a
// NodeEnvironment of the test: an InprocPeerNet transport (transport/inproc/inproc_peer.h), one fake clock
// shared by all, an inline executor for its checkpoint writes and evaluations, and no threads (stepped: its
// membership's pass and its loop's pass run in NodeRuntime::step). Its data directory is real: the
// incarnation file, status.json, the checkpoint files through the daemon's store and writer, model.npy.
// A crash destroys a node's NodeRuntime (no leave; the writes it had begun are on disk, as after kill -9
// once the kernel had them); a restart makes a new one on the same directory.
//
// The test/support part (tests/unit/daemon/test_node_inprocess.cc) wires the node's parts itself to reach
// states this one cannot (network cuts with held frames, exact partition timing); this file runs the
// daemon's own wiring: a regression there (a rejoin, a restart from files, the stop) fails here.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include "core/rng.h"
#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "daemon/node/background.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/node_runtime.h"
#include "daemon/node/sim_setup.h"
#include "engine/linked_engine.h"
#include "sim/simulator.h"
#include "transport/inproc/inproc_peer.h"
#include "transport/peer/peer_transport.h"

using namespace gossip;
using namespace gossip::daemon;
namespace fs = std::filesystem;

namespace {

// n nodes on a ring training a synthetic logistic regression, every node seeded with node 0 (the
// addresses are set after validation: they are the in-process network's, not tcp://).
Config clusterConfig(const std::string& algorithm, std::uint32_t n, Round rounds) {
  const bool lead = algorithm == "prox_lead" || algorithm == "lead";
  Config c = parseConfig("", "<test>",
                         {"data.format=synthetic", "model.kind=logistic", "cluster.nodes=" + std::to_string(n),
                          "cluster.topology=ring", "cluster.start_timeout_ms=5000", "algorithm.name=" + algorithm,
                          "algorithm.rounds=" + std::to_string(rounds), lead ? "compressor.name=lead" : "compressor.name=topk",
                          lead ? "compressor.bits=2" : "compressor.ratio=0.3", "node.http=", "node.checkpoint_every=10",
                          "monitor.status_every_ms=100"});
  c.cluster.seeds = {engine::InprocPeerNet::endpointOf(0)};
  return c;
}

struct SteppedCluster {
  Config base;
  engine::InprocPeerNet net;
  std::uint64_t clockMs = 0;   // the one clock of every node (NodeEnvironment::now)
  std::map<PeerId, std::unique_ptr<std::atomic<bool>>> stops;  // each node's stop flag (its SIGTERM)
  fs::path root;
  struct Process {
    std::unique_ptr<NodeRuntime> node;
    std::optional<int> exit;
    std::string error;  // what step() threw
    std::shared_ptr<std::ostringstream> log = std::make_shared<std::ostringstream>();
  };
  std::map<PeerId, Process> procs;
  std::map<PeerId, std::string> pastLogs;  // the logs of crashed lives, for failure messages

  explicit SteppedCluster(Config c) : base(std::move(c)) {
    static int serial = 0;
    // tmpfs where there is one: the checkpoints' fsyncs cost nothing there, and the test is about wiring.
    const fs::path tmp = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    root = tmp / ("gossipd-stepped-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~SteppedCluster() {
    net.setDrop(nullptr);  // the rules may refer to a test's locals, gone before this
    net.setCut(nullptr);
    net.setLatency(nullptr);
    procs.clear();
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  fs::path dirOf(PeerId id) const { return root / ("node" + std::to_string(id)); }

  void start(PeerId id) {
    Config c = base;
    c.node.id = id;
    c.node.data_dir = dirOf(id).string();
    c.node.listen = engine::InprocPeerNet::endpointOf(id);
    Process p;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*p.log);
    auto loggers = std::make_shared<logging::Loggers>(loggerOptions(c.node), sink);
    NodeEnvironment env{
        .transport = [this](const Config& cc) { return net.open(cc.node.id); },
        .now = [this] { return std::chrono::steady_clock::time_point(std::chrono::milliseconds(clockMs)); },
        .background = [] { return std::make_unique<InlineBackground>(); },
        .stop = stopFlag(id),
        .stepped = true};
    p.node = std::make_unique<NodeRuntime>(c, loggers, StartMode::Resume, std::move(env));
    procs[id] = std::move(p);
  }

  std::atomic<bool>* stopFlag(PeerId id) {
    auto& f = stops[id];
    if (!f) f = std::make_unique<std::atomic<bool>>(false);
    return f.get();
  }
  void stopAll() {
    for (auto& [id, p] : procs) stopFlag(id)->store(true);
  }

  void crash(PeerId id) {
    pastLogs[id] += procs.at(id).log->str();
    procs.erase(id);
  }

  bool running(const Process& p) const { return !p.exit && p.error.empty(); }
  bool anyRunning() const {
    for (const auto& [id, p] : procs)
      if (running(p)) return true;
    return false;
  }
  const engine::LinkedEngine& engineOf(PeerId id) const { return *procs.at(id).node->engine(); }

  // One millisecond: every running node's pass, in id order.
  void tick() {
    ++clockMs;
    net.advance(clockMs);
    for (auto& [id, p] : procs) {
      if (!running(p)) continue;
      try {
        p.exit = p.node->step();
      } catch (const std::exception& e) {
        p.error = e.what();
      }
    }
  }

  std::string describe() const {
    std::ostringstream s;
    for (const auto& [id, p] : procs) {
      const auto* e = p.node->engine();
      s << "node " << id << ": " << (p.exit ? "exit " + std::to_string(*p.exit) : p.error.empty() ? "running" : "error: " + p.error)
        << ", next round " << (e ? e->nextRound() : 0) << "\n";
    }
    return s.str();
  }
  std::string logOf(PeerId id) const {
    const auto it = pastLogs.find(id);
    return (it == pastLogs.end() ? "" : it->second + "--- restarted ---\n") + procs.at(id).log->str();
  }

  void runToRound(PeerId id, Round r, std::uint64_t limitMs) {
    const std::uint64_t end = clockMs + limitMs;
    while (engineOf(id).nextRound() < r) {
      REQUIRE_MESSAGE(clockMs < end, "node ", id, " did not reach round ", r, " within ", limitMs, " ms:\n", describe(),
                      "its log:\n", logOf(id));
      REQUIRE_MESSAGE(running(procs.at(id)), "node ", id, " stopped before round ", r, ":\n", describe(), logOf(id));
      tick();
    }
  }
  void runToEnd(std::uint64_t limitMs) {
    const std::uint64_t end = clockMs + limitMs;
    while (anyRunning() && clockMs < end) tick();
    REQUIRE_MESSAGE(!anyRunning(), "nodes still running after ", limitMs, " ms:\n", describe());
  }
};

// The largest |e_ij + e_ji| over the edges whose two ends run, are between rounds at the same round, and
// hold the edge open for the same life (the same start round, each for the other's current incarnation):
// then both have applied the same rounds of it, and the edge's two dual shares cancel (the invariant behind
// sum_i d_i = 0; engine-level: tests/unit/engine/protocol_harness.h). `pairs` counts the edges checked.
double edgeDualMismatch(const SteppedCluster& cl, std::uint64_t& pairs) {
  double worst = 0;
  for (const auto& [i, pi] : cl.procs) {
    if (!cl.running(pi)) continue;
    const auto& ei = cl.engineOf(i);
    for (const auto& li : ei.links()) {
      if (li.peer <= i || !li.open) continue;
      const auto pj = cl.procs.find(li.peer);
      if (pj == cl.procs.end() || !cl.running(pj->second)) continue;
      const auto& ej = cl.engineOf(li.peer);
      if (ei.inRound() || ej.inRound() || ei.nextRound() != ej.nextRound() || li.incarnation != ej.incarnation()) continue;
      for (const auto& lj : ej.links()) {
        if (lj.peer != i || !lj.open || lj.incarnation != ei.incarnation() || lj.start != li.start) continue;
        const training::Vec* a = ei.node().algorithm().edgeDual(li.peer);
        const training::Vec* b = ej.node().algorithm().edgeDual(i);
        REQUIRE_MESSAGE((a && b), "edge ", i, "-", li.peer, " is open at both ends but holds no dual share");
        worst = std::max(worst, static_cast<double>((*a + *b).lpNorm<Eigen::Infinity>()));
        ++pairs;
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("stepped NodeRuntimes started together train every round and compute gossipd sim's models bit for bit") {
  for (const std::string algorithm : {"dpsgd", "prox_lead"}) {
    CAPTURE(algorithm);
    const Config c = clusterConfig(algorithm, 5, 30);
    SteppedCluster cl(c);
    for (PeerId id = 0; id < 5; ++id) cl.start(id);
    cl.runToEnd(60000);
    const auto problem = buildSimProblem(c);
    sim::Simulator simulator(problem->setup);
    simulator.run();
    const auto want = simulator.models();
    for (const auto& [id, p] : cl.procs) {
      CAPTURE(id);
      INFO(cl.logOf(id));
      CHECK(p.error.empty());
      CHECK(p.exit == 0);
      CHECK(cl.engineOf(id).nextRound() == 30);
      CHECK(cl.engineOf(id).node().algorithm().x() == want.at(id));
      CHECK(fs::exists(cl.dirOf(id) / "model.npy"));
      CHECK(fs::exists(cl.dirOf(id) / "checkpoints" / "ckpt-30.gsc"));  // the last one, at the end
    }
  }
}

TEST_CASE("a stepped NodeRuntime crashed and restarted on its data directory resumes from its checkpoint file") {
  const Config c = clusterConfig("prox_lead", 5, 3000);
  SteppedCluster cl(c);
  for (PeerId id = 0; id < 5; ++id) cl.start(id);
  cl.runToRound(2, 95, 60000);
  CheckpointStore store(cl.dirOf(2) / "checkpoints", 3, logging::nullLogger("node"));
  const auto before = store.list();
  REQUIRE(!before.empty());
  const Round newest = before.front().first;
  CHECK(newest >= 90);
  cl.crash(2);
  const std::uint64_t downUntil = cl.clockMs + 2000;  // the others' failure detectors declare it dead meanwhile
  while (cl.clockMs < downUntil) cl.tick();
  cl.start(2);
  // The restart reads its incarnation file (a new life), resumes from the checkpoint, fetches the
  // neighbours' round and trains to the end with them; every edge's dual shares cancel (edgeDualMismatch).
  std::uint64_t pairs = 0;
  for (const std::uint64_t end = cl.clockMs + 300000; cl.anyRunning() && cl.clockMs < end;) {
    cl.tick();
    const double m = edgeDualMismatch(cl, pairs);
    REQUIRE_MESSAGE(m < 1e-4, "|e_ij + e_ji| = ", m, " at ", cl.clockMs, " ms");
  }
  REQUIRE_MESSAGE(!cl.anyRunning(), "nodes still running:\n", cl.describe());
  MESSAGE("e_ij = -e_ji checked on ", pairs, " edge states after the restart");
  CHECK(pairs > 1000);
  INFO(cl.logOf(2));
  const std::string log = cl.logOf(2);
  CHECK(log.find("incarnation 1 listening on inproc://node-2, resumed at round " + std::to_string(newest)) != std::string::npos);
  for (const auto& [id, p] : cl.procs) {
    CAPTURE(id);
    CHECK(p.error.empty());
    CHECK(p.exit == 0);
    CHECK(cl.engineOf(id).nextRound() == 3000);
  }
}

TEST_CASE("a stepped NodeRuntime asked to stop leaves cleanly - a checkpoint at its round - the others see a leave") {
  const Config c = clusterConfig("dpsgd", 4, 100000);
  SteppedCluster cl(c);
  for (PeerId id = 0; id < 4; ++id) cl.start(id);
  cl.runToRound(0, 40, 60000);
  cl.stopFlag(2)->store(true);  // node 2's SIGTERM
  const std::uint64_t askedAt = cl.clockMs;
  while (cl.running(cl.procs.at(2)) && cl.clockMs < askedAt + 10000) cl.tick();
  REQUIRE_MESSAGE(cl.procs.at(2).exit == 0, "node 2 did not stop within 10 s of its stop flag:\n", cl.describe(), cl.logOf(2));
  MESSAGE("node 2 stopped ", cl.clockMs - askedAt, " ms after its stop flag was set");
  const Round at = cl.engineOf(2).nextRound();
  CHECK(fs::exists(cl.dirOf(2) / "checkpoints" / ("ckpt-" + std::to_string(at) + ".gsc")));
  std::ifstream in(cl.dirOf(2) / "status.json");
  const std::string status((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(status.find("\"state\":\"stopped\"") != std::string::npos);
  // The others learn of a leave, not a death, and train on without it.
  const Round others = cl.engineOf(0).nextRound();
  cl.runToRound(0, others + 200, 60000);
  for (const PeerId id : {0u, 1u, 3u}) {
    CAPTURE(id);
    const std::string log = cl.logOf(id);
    INFO(log);
    CHECK(log.find("member 2 (incarnation 0) left") != std::string::npos);
    CHECK(log.find("member 2 (incarnation 0) declared dead") == std::string::npos);
  }
  cl.stopAll();
  cl.runToEnd(10000);
  for (const auto& [id, p] : cl.procs) CHECK(p.exit == 0);
}

// Seeded fault schedules over whole NodeRuntimes (the engine-level harness runs 200 with an oracle
// membership, test_node_inprocess.cc 30 over the node's parts): per seed, 5-8 Prox-LEAD nodes, 0-6% of model
// frames lost, frames delayed by 0-3 ms (seeded), one node crashed at a random round and restarted 0.2-1.5 s
// later on its data directory, in
// half the seeds a late joiner, and in half another node cut off from all the others for 1.5-3 s (declared
// dead, it rejoins as a new incarnation through the runtime's own rejoin). After every step: no node has failed, none has gone back a round within one
// process, and every edge's dual shares cancel where both ends applied the same rounds (edgeDualMismatch).
// At the end every node finished every round and exited 0, and each data directory's newest checkpoint is
// of the last round. (sum_i d_i over the final states is not checked: a node that is done applies no more
// view changes, so when a late restart changes the ring in the last rounds a neighbour that is still
// training closes an edge whose other end keeps its share; no one mixes with those states again.)
// Other seed counts: GOSSIP_STEPPED_SEEDS=1000 build/release/tests/test_node_runtime_stepped -tc='*fault schedules*'
TEST_CASE("stepped NodeRuntimes under seeded fault schedules - every node finishes - e_ij = -e_ji on every edge") {
  const char* env = std::getenv("GOSSIP_STEPPED_SEEDS");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr std::uint64_t kSeeds = 20;  // make test-long's sanitizer builds: ~5x slower (40 took 70 s of CPU under ASan)
#else
  constexpr std::uint64_t kSeeds = 200;
#endif
  const std::uint64_t seeds = env && *env ? std::stoull(env) : kSeeds;
  std::uint64_t joiners = 0, cuts = 0, rejoins = 0, lost = 0, pairs = 0;
  double worst = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    constexpr Round kRounds = 1500;  // ~3 s of the clock: the victim is back while the others train
    const auto n = static_cast<std::uint32_t>(5 + rng.below(4));
    Config c = clusterConfig("prox_lead", n, kRounds);
    c.node.checkpoint_every = 100;  // fewer files: the restarts still resume from one
    c.monitor.status_every_ms = 1000;
    SteppedCluster cl(c);
    for (PeerId id = 0; id < n; ++id) cl.start(id);
    const PeerId victim = 1 + static_cast<PeerId>(rng.below(n - 1));
    const Round crashAt = 20 + rng.below(200);
    const std::uint64_t downMs = 200 + rng.below(1300);
    const bool join = rng.uniform() < 0.5;
    const Round joinAt = 20 + rng.below(200);
    // A node cut off from all others long enough to be declared dead (it rejoins as a new incarnation).
    const bool cut = rng.uniform() < 0.5;
    PeerId isolated = 1 + static_cast<PeerId>(rng.below(n - 1));
    if (isolated == victim) isolated = isolated % (n - 1) + 1;
    const Round cutAt = 100 + rng.below(300);
    const std::uint64_t cutMs = 1500 + rng.below(1500);
    const double dropRate = 0.02 * static_cast<double>(rng.below(4));  // 0-6% of model frames lost
    Rng drops(seed * 7919);
    cl.net.setDrop([&](PeerId, PeerId) { return drops.uniform() < dropRate; });
    const std::uint64_t maxLatency = rng.below(4);  // each frame 0..maxLatency ms on the wire (FIFO per pair)
    Rng delays(seed * 104729);
    if (maxLatency) cl.net.setLatency([&] { return delays.below(maxLatency + 1); });
    std::uint64_t cutFrom = 0;
    bool cutting = false, healed = false;
    cl.net.setCut([&](PeerId a, PeerId b) { return cutting && (a == isolated) != (b == isolated); });
    INFO(n, " nodes, ", 100 * dropRate, "% of model frames lost, latency 0-", maxLatency, " ms; victim ", victim, " crashed at node 0's round ",
         crashAt, " for ", downMs, " ms; joiner: ", join ? "at round " + std::to_string(joinAt) : std::string("none"),
         "; cut: ", cut ? "node " + std::to_string(isolated) + " at round " + std::to_string(cutAt) + " for " + std::to_string(cutMs) + " ms" : std::string("none"));
    std::uint64_t crashedAt = 0, checked = 0;
    bool crashed = false, restarted = false, joined = false;
    std::map<PeerId, std::tuple<Incarnation, Round, Round>> seen;  // per process: its life, its engine's round, its reported round
    while (cl.clockMs < 300000) {
      const Round r0 = cl.engineOf(0).nextRound();
      if (!crashed && r0 >= crashAt) {
        cl.crash(victim);
        seen.erase(victim);
        crashed = true;
        crashedAt = cl.clockMs;
      }
      if (crashed && !restarted && cl.clockMs >= crashedAt + downMs) {
        cl.start(victim);
        restarted = true;
      }
      if (join && !joined && r0 >= joinAt) {
        cl.start(n);  // id n >= cluster.nodes: a late starter
        joined = true;
      }
      if (cut && !cutting && !healed && r0 >= cutAt) {
        cutting = true;
        cutFrom = cl.clockMs;
      }
      if (cutting && cl.clockMs >= cutFrom + cutMs) {
        cutting = false;
        healed = true;
      }
      if (restarted && (!join || joined) && (!cut || healed) && !cl.anyRunning()) break;
      cl.tick();
      const double m = edgeDualMismatch(cl, checked);
      worst = std::max(worst, m);
      REQUIRE_MESSAGE(m < 1e-4, "|e_ij + e_ji| = ", m, " at ", cl.clockMs, " ms");
      for (const auto& [id, p] : cl.procs) {
        REQUIRE_MESSAGE(p.error.empty(), "node ", id, " failed: ", p.error, "\n", cl.logOf(id));
        const auto& e = cl.engineOf(id);
        // The round the node reports (status.json, g.round) never goes back within a process, but for the
        // round a rejoin abandons (it was mixing it when declared dead). Its engine's: not within a life.
        auto& [inc, r, reported] = seen[id];
        if (e.incarnation() != inc) r = 0;
        REQUIRE_MESSAGE(e.nextRound() >= r, "node ", id, "'s engine went back from round ", r, " to ", e.nextRound());
        const Round now = p.node->round();
        REQUIRE_MESSAGE(now + (e.incarnation() != inc ? 1 : 0) >= reported, "node ", id, " reported round ", reported, " then ", now);
        inc = e.incarnation();
        r = e.nextRound();
        reported = now;
      }
    }
    REQUIRE_MESSAGE(!cl.anyRunning(), "nodes still running at ", cl.clockMs, " ms:\n", cl.describe());
    CHECK(checked > 1000);  // the edge check ran (a filter too strict would check nothing)
    pairs += checked;
    for (const auto& [id, p] : cl.procs) {
      CAPTURE(id);
      CHECK(p.exit == 0);
      CHECK(cl.engineOf(id).nextRound() == kRounds);
      CheckpointStore store(cl.dirOf(id) / "checkpoints", 3, logging::nullLogger("node"));
      const auto files = store.list();
      REQUIRE(!files.empty());
      CHECK(files.front().first == kRounds);
    }
    if (cut) {
      // Declared dead while cut off, it went on as a new life (rejoinAsNewIncarnation) and finished.
      CHECK(cl.engineOf(isolated).incarnation() >= 1);
      rejoins += cl.engineOf(isolated).incarnation() >= 1;
    }
    joiners += join;
    cuts += cut;
    lost += cl.net.lost();
  }
  MESSAGE(seeds, " schedules over whole NodeRuntimes of 5-8 nodes: ", seeds, " crashes and restarts from files, ",
          joiners, " late joiners, ", cuts, " nodes cut off (", rejoins, " rejoined as a new incarnation), ", lost,
          " frames lost; e_ij = -e_ji checked on ", pairs, " edge states, largest |e_ij + e_ji| ", worst);
}
