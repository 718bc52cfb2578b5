// Whole nodes in one process, stepped on one fake clock (issue 27, "the node is testable in-process"): each
// node is what `gossipd run` wires (daemon/node/node_build.cc) minus sockets, files and threads - its
// real peer::Membership (SWIM: joins, probes, suspicion, deaths), its LinkedEngine and RoundDriver with the
// daemon's options, and its Lifecycle (joining, syncing, training, done). Membership messages go through a
// queue of this test with a delay of 1 ms; engine frames through the in-process network. Everything runs
// on the test's thread in a fixed order, so a run is a pure function of its inputs.
//
// What it checks, each against the daemon's documented behaviour (docs/daemon.md, "Life of a node"):
//  - a cluster started together trains every round and computes the simulator's models bit for bit;
//  - a late joiner fetches the model and round from its neighbours, then trains to the end with them;
//  - a crash is detected by membership, the survivors drop its edges and finish, sum_i d_i stays 0;
//  - a stop during the join leaves at once; unanswered seeds end the join after cluster.start_timeout_ms.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <sstream>

#include "compressors/compressor.h"
#include "core/rng.h"
#include "core/serial.h"
#include "core/error.h"
#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "daemon/node/lifecycle.h"
#include "daemon/node/membership_view.h"
#include "engine/round_driver.h"
#include "engine/sync_engine.h"
#include "membership/membership.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/synthetic.h"
#include "transport/inproc/inproc.h"

using namespace gossip;
using namespace gossip::daemon;

namespace {

peer::MsClock::time_point at(std::uint64_t ms) { return peer::MsClock::time_point(std::chrono::milliseconds(ms)); }
std::string endpointOf(PeerId id) { return "inproc://node-" + std::to_string(id); }

// The lifecycle's view of a membership the test steps itself (the daemon's is a MembershipRunner on its thread).
class SteppedMembership final : public MembershipView {
 public:
  explicit SteppedMembership(const peer::Membership& m) : m_(m) {}
  bool joined() const override { return m_.joined(); }
  bool isolated() const override { return m_.isolated(); }
  std::vector<engine::Member> alive() const override { return m_.alive(); }
  peer::MembershipStats stats() const override { return m_.stats(); }

 private:
  const peer::Membership& m_;
};

struct Problem {
  training::Dataset data;
  training::Partition partition;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  Problem(std::uint32_t n, compress::CompressorSpec spec) {
    auto [all, part] = training::concatNodes(training::makeSyntheticLogistic(static_cast<int>(n), 30, 10, 1.0, 5));
    data = std::move(all);
    partition = std::move(part);
    model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = 0, .l2 = 0.01}, data.features(), data.classes);
    comp = compress::makeCompressor(spec);
  }
};

struct Node {
  PeerId id = 0;
  Incarnation incarnation = 0;
  std::unique_ptr<engine::InprocTransport> transport;
  std::unique_ptr<peer::Membership> membership;
  std::unique_ptr<SteppedMembership> view;
  std::unique_ptr<engine::LinkedEngine> engine;
  std::unique_ptr<engine::RoundDriver> driver;
  std::unique_ptr<Lifecycle> life;
  Lifecycle::Outcome outcome = Lifecycle::Outcome::Continue;
  std::string error;  // what step() threw (the daemon's one-line error), if it did
};

struct Cluster {
  Problem& p;
  std::string algorithm;
  Config c;
  std::atomic<bool> stop{false};
  engine::InprocNetwork net;
  std::map<PeerId, Node> nodes;
  struct Message {
    std::uint64_t due;
    PeerId from;
    std::string to;  // endpoint: a seed's id is not known to the joiner
    Bytes payload;
  };
  std::deque<Message> wire;
  std::uint64_t now = 0;

  Cluster(Problem& problem, std::string algo, std::uint32_t n, Round rounds) : p(problem), algorithm(std::move(algo)) {
    c.cluster.nodes = n;
    c.cluster.seeds = {endpointOf(0)};
    c.cluster.start_timeout_ms = 5000;
    c.cluster.link_timeout_ms = 1000;
    c.algorithm.rounds = rounds;
    c.algorithm.round_timeout_ms = 2000;
  }

  // A node's newest checkpoint: its state between two rounds and the round it continues at.
  struct Checkpoint {
    Bytes state;
    Round next = 0;
  };
  std::map<PeerId, Checkpoint> checkpoints;

  // A node as node_build.cc wires one: its membership seeded with node 0 (node 0 itself starts the cluster).
  // With a checkpoint, a restart as loadNewestCheckpoint does it: the state loaded, the edges dropped.
  void start(PeerId id, Incarnation inc = 0, const Checkpoint* from = nullptr) {
    Node& n = nodes[id];
    n = Node{};
    n.id = id;
    n.incarnation = inc;
    net.attach(id);
    n.transport = std::make_unique<engine::InprocTransport>(net, id);
    std::vector<std::string> seeds;
    if (id != 0) seeds = c.cluster.seeds;
    n.membership = std::make_unique<peer::Membership>(
        peer::MemberInfo{.id = id, .incarnation = inc, .endpoint = endpointOf(id), .instance = 100 + id},
        seeds, peer::MembershipOptions{},
        [this, id](PeerId, const std::string& endpoint, Bytes payload) {
          wire.push_back({now + 1, id, endpoint, std::move(payload)});
        },
        /*rng_seed=*/1000 + id);
    n.view = std::make_unique<SteppedMembership>(*n.membership);
    algo::AlgorithmParams ap;
    ap.name = algorithm;
    ap.gamma = algorithm == "choco" ? 0.5 : 1.0;
    ap.eta = 0.8;
    ap.incarnation = inc;
    training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(p.model->dim()));
    auto est = training::makeEstimator({.kind = "full"}, *p.model, p.data, p.partition[id], 1);
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.2; };
    topology::TopologyParams ring;
    ring.kind = topology::Kind::Ring;
    n.engine = std::make_unique<engine::LinkedEngine>(
        id, inc, std::make_unique<algo::Node>(id, algo::makeAlgorithm(ap, *p.comp, id, x0), std::move(est), sched),
        *n.transport,
        engine::LinkOptions{.topology = ring, .retransmit_ms = 200, .hello_timeout_ms = c.cluster.link_timeout_ms});
    n.driver = std::make_unique<engine::RoundDriver>(
        *n.engine, engine::RoundDriverOptions{.rounds = c.algorithm.rounds,
                                              .barrier = engine::StartBarrier::EveryRound,
                                              .roundTimeoutMs = c.algorithm.round_timeout_ms});
    n.life = std::make_unique<Lifecycle>(c, id, logging::nullLogger("node"), stop,
                                         Lifecycle::Hooks{.afterRound = [](Round) {}, .finish = [](NodeState) {}});
    n.life->attach({n.engine.get(), n.driver.get(), n.view.get(), nullptr, inc});
    if (from) {
      ByteReader r(from->state, "checkpoint");
      n.engine->node().load(r);
      n.engine->dropAllEdges();
      n.life->resumeAt(from->next);
    }
  }

  // A crash: the process is gone, with everything in flight to it (its checkpoint stays).
  void crash(PeerId id) {
    nodes.erase(id);
    net.detach(id);
    for (auto& m : wire)
      if (m.to == endpointOf(id)) m.to.clear();  // lost with the process
  }

  bool running(const Node& n) const { return n.outcome == Lifecycle::Outcome::Continue && n.error.empty(); }

  // One millisecond: membership messages that are due, then every running node's membership tick and
  // lifecycle step (the daemon's two threads, here one after the other).
  void tick() {
    ++now;
    while (!wire.empty() && wire.front().due <= now) {
      Message m = std::move(wire.front());
      wire.pop_front();
      for (auto& [id, n] : nodes)
        if (endpointOf(id) == m.to && running(n)) n.membership->receive(m.from, m.payload, at(now));
    }
    for (auto& [id, n] : nodes) {
      if (!running(n)) continue;
      n.membership->tick(at(now));
      // NodeRuntime::Impl::onMembership: a change of the view goes to the engine when the lifecycle says so.
      if (!n.membership->takeEvents().empty()) n.life->viewChanged(now);
      try {
        // Two lifecycle steps per membership tick: a round of this small model then takes a few ms of the
        // fake clock, so membership (probes every 200 ms) sees hundreds of rounds go by, as with a real model.
        for (int k = 0; k < 2 && n.outcome == Lifecycle::Outcome::Continue; ++k) n.outcome = n.life->step(now);
      } catch (const std::exception& e) {
        n.error = e.what();
      }
      // The daemon leaves the cluster on its way out (node_runtime.cc), then its process ends.
      if (!running(n)) n.membership->leave(at(now));
      // A checkpoint after every round (the daemon's node.checkpoint_every, at its smallest).
      if (n.life->state() == NodeState::Training && !n.engine->inRound() &&
          (!checkpoints.count(id) || checkpoints.at(id).next != n.engine->nextRound())) {
        Checkpoint& k = checkpoints[id];
        k.state.clear();
        ByteWriter w(k.state);
        n.engine->node().save(w);
        k.next = n.engine->nextRound();
      }
    }
  }

  // Ticks until every node has left (Finished or Stop) or threw; fails after `limitMs`.
  void runToEnd(std::uint64_t limitMs) {
    const std::uint64_t end = now + limitMs;
    auto anyRunning = [&] {
      for (const auto& [id, n] : nodes)
        if (running(n)) return true;
      return false;
    };
    while (anyRunning() && now < end) tick();
    std::ostringstream s;
    for (const auto& [id, n] : nodes)
      s << "node " << id << ": " << nodeStateName(n.life->state()) << " next round " << n.engine->nextRound()
        << (n.error.empty() ? "" : " error: " + n.error) << "\n";
    REQUIRE_MESSAGE(!anyRunning(), "nodes still running after ", limitMs, " ms:\n", s.str());
  }
};

// The simulator's protocol in lock step from round 0 over the same ring: what linked nodes that all
// start together must compute, bit for bit.
std::map<PeerId, training::Vec> syncModels(Problem& p, const std::string& algorithm, std::uint32_t n, Round rounds) {
  engine::InprocNetwork net;
  std::map<PeerId, std::unique_ptr<engine::InprocTransport>> transports;
  std::map<PeerId, std::unique_ptr<engine::SyncEngine>> engines;
  engine::View view;
  for (PeerId id = 0; id < n; ++id) {
    algo::AlgorithmParams ap;
    ap.name = algorithm;
    ap.gamma = algorithm == "choco" ? 0.5 : 1.0;
    ap.eta = 0.8;
    training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(p.model->dim()));
    auto est = training::makeEstimator({.kind = "full"}, *p.model, p.data, p.partition[id], 1);
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.2; };
    net.attach(id);
    transports[id] = std::make_unique<engine::InprocTransport>(net, id);
    engines[id] = std::make_unique<engine::SyncEngine>(
        id, 0, std::make_unique<algo::Node>(id, algo::makeAlgorithm(ap, *p.comp, id, x0), std::move(est), sched),
        *transports[id]);
    view.push_back({id, 0});
  }
  topology::TopologyParams ring;
  ring.kind = topology::Kind::Ring;
  auto vg = engine::buildViewGraph(view, ring, topology::WeightRule::Metropolis, engines.at(0)->stateless(), 1);
  for (auto& [id, e] : engines) e->setView(vg, 0);
  for (int pass = 0; pass < 4; ++pass)
    for (auto& [id, e] : engines) e->drain(0);
  for (Round t = 0; t < rounds; ++t) {
    for (auto& [id, e] : engines) e->beginRound(t);
    for (auto& [id, e] : engines) e->endRound(t);
  }
  std::map<PeerId, training::Vec> out;
  for (auto& [id, e] : engines) out[id] = e->node().algorithm().x();
  return out;
}

training::Vec dualSum(const Cluster& cl) {
  training::Vec sum;
  for (const auto& [id, n] : cl.nodes) {
    const training::Vec& d = *n.engine->node().algorithm().dual();
    if (sum.size() == 0) sum = training::Vec::Zero(d.size());
    sum += d;
  }
  return sum;
}

}  // namespace

TEST_CASE("in-process nodes started together join - train every round and compute the simulator's models") {
  for (const std::string algorithm : {"prox_lead", "choco", "dpsgd"}) {
    CAPTURE(algorithm);
    Problem p(5, algorithm == "prox_lead" ? compress::CompressorSpec{.name = "lead", .bits = 2}
                                          : compress::CompressorSpec{.name = "topk", .ratio = 0.3});
    Cluster cl(p, algorithm, 5, 25);
    for (PeerId id = 0; id < 5; ++id) cl.start(id);
    cl.runToEnd(60000);
    const auto want = syncModels(p, algorithm, 5, 25);
    for (const auto& [id, n] : cl.nodes) {
      CAPTURE(id);
      CHECK(n.error.empty());
      CHECK(n.outcome == Lifecycle::Outcome::Finished);
      CHECK(n.life->state() == NodeState::Done);
      CHECK(n.engine->nextRound() == 25);
      CHECK(n.engine->node().algorithm().x() == want.at(id));
    }
  }
}

TEST_CASE("in-process: a late joiner syncs the model and round from its neighbours - then trains to the end") {
  Problem p(5, {.name = "lead", .bits = 2});
  Cluster cl(p, "prox_lead", 4, 2000);
  for (PeerId id = 0; id < 4; ++id) cl.start(id);
  while (cl.nodes.at(0).engine->nextRound() < 100) {
    cl.tick();
    REQUIRE_MESSAGE(cl.now < 60000, "the first four nodes did not reach round 100");
  }
  cl.start(4);  // id 4 >= cluster.nodes: a late starter (Lifecycle::lateStarter)
  bool synced = false;
  Round joinedAt = 0;
  while (!synced && cl.now < 120000) {
    cl.tick();
    const Node& n4 = cl.nodes.at(4);
    REQUIRE(n4.error.empty());
    if (n4.life->state() == NodeState::Training) {
      synced = true;
      joinedAt = n4.engine->nextRound();
    }
  }
  REQUIRE_MESSAGE(synced, "node 4 never finished syncing");
  MESSAGE("node 4 trains from round ", joinedAt, " at ", cl.now, " ms (node 0 at round ", cl.nodes.at(0).engine->nextRound(), ")");
  CHECK(cl.nodes.at(4).engine->stats().states_received == 1);
  CHECK(joinedAt >= 100);  // the neighbours' round, not 0
  cl.runToEnd(120000);
  for (const auto& [id, n] : cl.nodes) {
    CAPTURE(id);
    CHECK(n.error.empty());
    CHECK(n.life->state() == NodeState::Done);
    CHECK(n.engine->nextRound() == 2000);
  }
  // Edges were opened and closed around the joiner at both ends in the same rounds: the duals still cancel.
  CHECK(dualSum(cl).lpNorm<Eigen::Infinity>() < 1e-4);
}

TEST_CASE("in-process: a crashed node is declared dead - the survivors drop its edges and finish") {
  Problem p(5, {.name = "lead", .bits = 2});
  Cluster cl(p, "prox_lead", 5, 3000);
  for (PeerId id = 0; id < 5; ++id) cl.start(id);
  while (cl.nodes.at(0).engine->nextRound() < 50) {
    cl.tick();
    REQUIRE_MESSAGE(cl.now < 60000, "the cluster did not reach round 50");
  }
  cl.crash(2);
  const std::uint64_t crashedAt = cl.now;
  const Round roundAtCrash = cl.nodes.at(0).engine->nextRound();
  cl.runToEnd(120000);
  std::uint64_t deaths = 0;
  for (const auto& [id, n] : cl.nodes) deaths += n.membership->stats().deaths_declared;
  MESSAGE("node 2 crashed at ", crashedAt, " ms (round ", roundAtCrash, "); the survivors finished at ", cl.now,
          " ms; deaths declared by the survivors' own timers: ", deaths);
  CHECK(deaths >= 1);
  for (const auto& [id, n] : cl.nodes) {
    CAPTURE(id);
    CHECK(n.error.empty());
    CHECK(n.life->state() == NodeState::Done);
    CHECK(n.engine->nextRound() == 3000);
    for (const auto& m : n.membership->alive()) CHECK(m.id != 2);
  }
  CHECK(dualSum(cl).lpNorm<Eigen::Infinity>() < 1e-4);
}

TEST_CASE("in-process: a stop while joining leaves at once - unanswered seeds end the join with one line") {
  Problem p(3, {.name = "lead", .bits = 2});
  {
    Cluster cl(p, "prox_lead", 3, 10);
    cl.start(1);  // its seed, node 0, never starts
    for (int k = 0; k < 50; ++k) cl.tick();
    CHECK(cl.nodes.at(1).life->state() == NodeState::Joining);
    cl.stop = true;
    cl.tick();
    CHECK(cl.nodes.at(1).outcome == Lifecycle::Outcome::Stop);
  }
  {
    Cluster cl(p, "prox_lead", 3, 10);
    cl.start(1);
    while (cl.running(cl.nodes.at(1)) && cl.now < 20000) cl.tick();
    const Node& n = cl.nodes.at(1);
    CHECK(n.error.find("no seed answered within cluster.start_timeout_ms (5000 ms") != std::string::npos);
    CHECK(cl.now >= 5000);
    CHECK(cl.now < 5100);
  }
}

// Seeded fault schedules over whole nodes (the engine-level harness, tests/unit/engine/protocol_harness.h,
// runs 200 of its own with an oracle membership): here membership is real and each node learns of a crash,
// a restart and a join by its own probes and gossip. Per seed: 5 Prox-LEAD nodes, 5% of model and ack
// frames lost, one node crashed at a random round and restarted 0.2-1.5 s later from its newest checkpoint
// as a new incarnation, and in half the seeds a late joiner. Every node must finish every round, and
// sum_i d_i = 0 over the nodes that finish.
// More seeds: GOSSIP_NODE_SEEDS=500 build/release/tests/test_node_inprocess -tc='*fault schedules*'
TEST_CASE("in-process: 30 seeded fault schedules over whole nodes - every node finishes and sum d = 0") {
  double worst = 0;
  std::uint64_t transfers = 0, kept = 0, retransmitted = 0, deaths = 0, joiners = 0;
  const char* env = std::getenv("GOSSIP_NODE_SEEDS");
  const std::uint64_t seeds = env && *env ? std::stoull(env) : 30;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    Problem p(6, {.name = "lead", .bits = 2});
    Cluster cl(p, "prox_lead", 5, 400);
    Rng drops(seed * 7919);
    cl.net.setDropRule([&](PeerId, PeerId) { return drops.uniform() < 0.05; });
    for (PeerId id = 0; id < 5; ++id) cl.start(id);
    const PeerId victim = 1 + static_cast<PeerId>(rng.below(4));
    const Round crashAt = 20 + rng.below(200);
    const std::uint64_t downMs = 200 + rng.below(1300);
    const bool join = rng.uniform() < 0.5;
    const Round joinAt = 20 + rng.below(200);
    std::uint64_t crashedAt = 0;
    bool crashed = false, restarted = false, joined = false;
    while (cl.now < 200000) {
      const Round r0 = cl.nodes.at(0).engine->nextRound();
      if (!crashed && r0 >= crashAt) {
        cl.crash(victim);
        crashed = true;
        crashedAt = cl.now;
      }
      if (crashed && !restarted && cl.now >= crashedAt + downMs) {
        REQUIRE_MESSAGE(cl.checkpoints.count(victim), "node ", victim, " crashed before its first checkpoint");
        const auto k = cl.checkpoints.at(victim);
        cl.start(victim, 1, &k);
        restarted = true;
      }
      if (join && !joined && r0 >= joinAt) {
        cl.start(5);
        joined = true;
      }
      bool anyRunning = false;
      for (const auto& [id, n] : cl.nodes) anyRunning = anyRunning || cl.running(n);
      if (restarted && (!join || joined) && !anyRunning) break;
      cl.tick();
    }
    INFO("victim ", victim, " crashed at node 0's round ", crashAt, " for ", downMs, " ms; joiner: ",
         join ? "at round " + std::to_string(joinAt) : std::string("none"));
    for (const auto& [id, n] : cl.nodes) {
      CAPTURE(id);
      CHECK(n.error.empty());
      CHECK(n.life->state() == NodeState::Done);
      CHECK(n.engine->nextRound() == 400);
    }
    const double mismatch = dualSum(cl).lpNorm<Eigen::Infinity>();
    worst = std::max(worst, mismatch);
    CHECK(mismatch < 1e-4);
    for (const auto& [id, n] : cl.nodes) {
      transfers += n.engine->stats().states_received;
      retransmitted += n.engine->stats().retransmitted;
      deaths += n.membership->stats().deaths_declared;
    }
    kept += cl.nodes.at(victim).engine->stats().states_received == 0;
    joiners += join;
  }
  MESSAGE(seeds, " schedules: ", seeds, " crashes and restarts (", kept, " kept their own checkpoint), ", joiners,
          " late joiners, ", transfers, " state transfers, ", deaths, " deaths declared, ", retransmitted,
          " frames retransmitted; largest |sum_i d_i| ", worst);
}
