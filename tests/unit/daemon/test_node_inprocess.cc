// Whole nodes in one process, stepped on one fake clock (issue 27, "the node is testable in-process"): each
// node is what `gossipd run` wires (daemon/node/node_build.cc) minus sockets and threads - its
// real peer::Membership (SWIM: joins, probes, suspicion, deaths), its LinkedEngine and RoundDriver with the
// daemon's options, its Lifecycle (joining, syncing, training, done), and where a test asks for them its
// checkpoint files through the daemon's store and writer on an inline executor. Membership messages go through a
// queue of this test (1 ms, or seeded delays); engine frames through the in-process network; network cuts
// between islands drop or hold both. Everything runs on the test's thread in a fixed order, so a run is a
// pure function of its inputs.
//
// What it checks, each against the daemon's documented behaviour (docs/daemon.md, "Life of a node"):
//  - a cluster started together trains every round and computes the simulator's models bit for bit;
//  - a late joiner fetches the model and round from its neighbours, then trains to the end with them;
//  - a crash is detected by membership, the survivors drop its edges and finish, sum_i d_i stays 0;
//  - a stop during the join leaves at once; unanswered seeds end the join after cluster.start_timeout_ms;
//  - under seeded faults (lost frames, a crash and a restart from a checkpoint, a late joiner) every node
//    finishes with sum_i d_i = 0;
//  - a crashed node restarts from its newest checkpoint file as the daemon does (resumeFromNewest), a torn
//    newer file set aside, and writes its last checkpoint at the end;
//  - a healed partition makes exactly the losing side rejoin (docs/daemon.md, "Partitions and isolation").
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "tests/support/logistic_problem.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/serial.h"
#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "daemon/node/background.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/join_seeds.h"
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

// The node's transport: the in-process network, minus whatever crosses a network cut of the test (every
// frame, model or control, as when the cable is pulled).
class CutTransport final : public engine::Transport {
 public:
  using Cut = std::function<bool(PeerId from, PeerId to)>;
  // hold: frames across a cut wait and go once the pair is joined again (a ZeroMQ socket queues for a peer
  // it cannot reach); otherwise they are lost.
  CutTransport(engine::InprocNetwork& net, PeerId self, const Cut& cut, const bool& hold)
      : inner_(net, self), self_(self), cut_(cut), hold_(hold) {}
  void send(PeerId to, Bytes header, engine::SharedBytes payload) override {
    if (!cut_(self_, to)) return inner_.send(to, std::move(header), std::move(payload));
    if (hold_) held_.push_back({to, std::move(header), std::move(payload)});
  }
  bool receive(engine::RawFrame& out) override { return inner_.receive(out); }
  // Sends the held frames whose pair is joined again, in the order they were sent.
  void flush() {
    std::erase_if(held_, [&](Held& h) {
      if (cut_(self_, h.to)) return false;
      inner_.send(h.to, std::move(h.header), std::move(h.payload));
      return true;
    });
  }

 private:
  struct Held {
    PeerId to;
    Bytes header;
    engine::SharedBytes payload;
  };
  engine::InprocTransport inner_;
  PeerId self_;
  const Cut& cut_;
  const bool& hold_;
  std::vector<Held> held_;
};

using Problem = test_support::LogisticProblem;

struct Node {
  PeerId id = 0;
  Incarnation incarnation = 0;
  std::unique_ptr<CutTransport> transport;
  std::unique_ptr<peer::Membership> membership;
  std::unique_ptr<SteppedMembership> view;
  std::unique_ptr<engine::LinkedEngine> engine;
  std::unique_ptr<engine::RoundDriver> driver;
  std::unique_ptr<Lifecycle> life;
  Lifecycle::Outcome outcome = Lifecycle::Outcome::Continue;
  std::string error;  // what step() threw (the daemon's one-line error), if it did
  unsigned rejoins = 0;  // lives begun after a death verdict on this node
};

// A node's data directory and the daemon's checkpoint parts over it (checkpoint_store.h): the store, the
// writer, and the background executor it runs on, here inline (background.h), so the test stays on one
// thread. It outlives the node's crash, as a directory on disk does.
struct NodeFiles {
  std::filesystem::path dir;
  Round every;  // node.checkpoint_every
  CheckpointStore store;
  InlineBackground background;
  CheckpointWriter writer;
  NodeFiles(std::filesystem::path d, Round checkpointEvery, std::function<std::uint64_t()> nowMs)
      : dir(makeDir(std::move(d))),
        every(checkpointEvery),
        store(dir / "checkpoints", 3, logging::nullLogger("node")),
        writer(store, dir, background, std::move(nowMs), logging::nullLogger("node")) {}
  ~NodeFiles() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::filesystem::path makeDir(std::filesystem::path d) {
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d / "checkpoints");
    return d;
  }
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
  // Membership messages in flight, by when they arrive (equal times in the order sent).
  std::multimap<std::uint64_t, Message> wire;
  // Each message's delay in ms (1 unless a test draws them).
  std::function<std::uint64_t()> latency = [] { return std::uint64_t{1}; };
  std::uint64_t now = 0;
  // Network cuts: islands[id] names a node's island while a partition lasts; nodes of different islands
  // exchange nothing (membership or engine). Empty: one network.
  std::map<PeerId, int> islands;
  // A pair of different islands is joined again at its own moment after the cut ends (connections come
  // back one by one); before that moment it is still cut. Empty: all at once.
  std::map<std::pair<PeerId, PeerId>, std::uint64_t> rejoinedAt;
  bool holdAcrossCut = false;  // frames and messages across a cut wait for the pair instead of being lost
  CutTransport::Cut cut = [this](PeerId a, PeerId b) {
    if (islands.empty()) return false;
    const auto ia = islands.find(a), ib = islands.find(b);
    if ((ia == islands.end() ? 0 : ia->second) == (ib == islands.end() ? 0 : ib->second)) return false;
    const auto r = rejoinedAt.find({std::min(a, b), std::max(a, b)});
    return r == rejoinedAt.end() || now < r->second;
  };

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
  // Nodes that keep their checkpoints in files through the daemon's parts instead (useFiles).
  std::map<PeerId, std::unique_ptr<NodeFiles>> files;

  // Node `id` writes a checkpoint every `every` rounds and at its end, as the daemon does (NodeRuntime's
  // afterRound and finish), into a data directory of its own; a restart (start with inc > 0) resumes from
  // it through resumeFromNewest, as node_build.cc does.
  NodeFiles& useFiles(PeerId id, Round every) {
    static int serial = 0;
    const auto dir = std::filesystem::temp_directory_path() /
                     ("gossipd-inprocess-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    return *(files[id] = std::make_unique<NodeFiles>(dir, every, [this] { return now; }));
  }
  void checkpointToFiles(PeerId id, Round next) {
    NodeFiles& f = *files.at(id);
    engine::LinkedEngine& e = *nodes.at(id).engine;
    const auto& x = e.node().algorithm().x();
    f.writer.submit(streamCheckpoint(f.store, f.dir, id, next, [&](ByteWriter& w) { e.node().save(w); },
                                     {x.data(), static_cast<std::size_t>(x.size())}, nlohmann::json{{"round", next}}));
  }
  Lifecycle::Hooks hooksFor(PeerId id) {
    if (!files.count(id)) return {.afterRound = [](Round) {}, .finish = [](NodeState) {}};
    return {.afterRound = [this, id](Round done) {
              if (done % files.at(id)->every == 0) checkpointToFiles(id, done);
            },
            .finish = [this, id](NodeState) { checkpointToFiles(id, nodes.at(id).engine->nextRound()); }};
  }

  // A node's parts for one life, as node_build.cc makes them (makeMembership, makeEngine): its membership
  // with `seeds`, its engine with the daemon's link options, its round driver with the daemon's policy.
  void makeParts(Node& n, Incarnation inc, std::vector<std::string> seeds) {
    const PeerId id = n.id;
    n.incarnation = inc;
    net.detach(id);  // a new life gets fresh connections (PeerLinks::forgetAll)
    net.attach(id);
    n.transport = std::make_unique<CutTransport>(net, id, cut, holdAcrossCut);
    n.membership = std::make_unique<peer::Membership>(
        peer::MemberInfo{.id = id, .incarnation = inc, .endpoint = endpointOf(id), .instance = 100 + id},
        std::move(seeds), peer::MembershipOptions{},
        [this, id](PeerId, const std::string& endpoint, Bytes payload) {
          const std::uint64_t due = now + latency();
          wire.emplace(due, Message{due, id, endpoint, std::move(payload)});
        },
        /*rng_seed=*/1000 + id + 100 * inc);
    n.view = std::make_unique<SteppedMembership>(*n.membership);
    topology::TopologyParams ring;
    ring.kind = topology::Kind::Ring;
    n.driver.reset();  // it refers to the engine being replaced
    n.engine = std::make_unique<engine::LinkedEngine>(
        id, inc, p.makeNode(algorithm, id, inc), *n.transport,
        engine::LinkOptions{.topology = ring, .retransmit_ms = 200, .hello_timeout_ms = c.cluster.link_timeout_ms});
    n.driver = std::make_unique<engine::RoundDriver>(
        *n.engine, engine::RoundDriverOptions{.rounds = c.algorithm.rounds,
                                              .barrier = engine::StartBarrier::EveryRound,
                                              .roundTimeoutMs = c.algorithm.round_timeout_ms});
  }

  // A node as `gossipd run` starts one: its membership seeded with node 0 (node 0 itself starts the
  // cluster). With a checkpoint, a restart as loadNewestCheckpoint does it: the state loaded, the edges dropped.
  void start(PeerId id, Incarnation inc = 0, const Checkpoint* from = nullptr) {
    Node& n = nodes[id];
    n = Node{};
    n.id = id;
    makeParts(n, inc, joinSeeds("", c.cluster.seeds, {endpointOf(id)}, {}));  // node 0's seed is itself
    n.life = std::make_unique<Lifecycle>(c, id, logging::nullLogger("node"), stop, hooksFor(id));
    n.life->attach({n.engine.get(), n.driver.get(), n.view.get(), nullptr, inc});
    if (from) {
      ByteReader r(from->state, "checkpoint");
      n.engine->node().load(r);
      n.engine->dropAllEdges();
      n.life->resumeAt(from->next);
    } else if (inc > 0 && files.count(id)) {
      NodeFiles& f = *files.at(id);
      if (const auto next = resumeFromNewest(f.store, *n.engine, id, c.algorithm.rounds, f.dir)) n.life->resumeAt(*next);
    }
  }

  // Declared dead while it ran on: a new life with its model, as NodeRuntime::Impl::rejoinAsNewIncarnation
  // does it: the state carried over (LifeCarry, lifecycle.h), the seeds of daemon/node/join_seeds.h.
  void rejoin(Node& n) {
    const LifeCarry carry = LifeCarry::takeFrom(*n.engine);
    makeParts(n, n.incarnation + 1,
              joinSeeds(n.membership->rejoinVia(), c.cluster.seeds, {endpointOf(n.id)},
                        knownEndpoints(n.membership->members(), n.id)));
    carry.putInto(*n.engine);
    n.life->attach({n.engine.get(), n.driver.get(), n.view.get(), nullptr, n.incarnation});
    n.life->rejoined(carry.next, now);
    ++n.rejoins;
  }

  // A crash: the process is gone, with everything in flight to it (its checkpoint stays).
  void crash(PeerId id) {
    nodes.erase(id);
    net.detach(id);
    for (auto& [due, m] : wire)
      if (m.to == endpointOf(id)) m.to.clear();  // lost with the process
  }

  bool running(const Node& n) const { return n.outcome == Lifecycle::Outcome::Continue && n.error.empty(); }

  // One millisecond: membership messages that are due, then every running node's membership tick and
  // lifecycle step (the daemon's two threads, here one after the other).
  void tick() {
    ++now;
    std::vector<Message> held;
    while (!wire.empty() && wire.begin()->first <= now) {
      Message m = std::move(wire.begin()->second);
      wire.erase(wire.begin());
      for (auto& [id, n] : nodes) {
        if (endpointOf(id) != m.to || !running(n)) continue;
        if (!cut(m.from, id))
          n.membership->receive(m.from, m.payload, at(now));
        else if (holdAcrossCut)
          held.push_back(std::move(m));  // tried again next millisecond
      }
    }
    for (auto& m : held) wire.emplace(now + 1, std::move(m));
    for (auto& [id, n] : nodes) n.transport->flush();
    for (auto& [id, n] : nodes) {
      if (!running(n)) continue;
      n.membership->tick(at(now));
      if (n.membership->declaredDead() && !finished(n.life->state())) rejoin(n);  // NodeRuntime's loop
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

  // Ticks until node `id` has begun round r; fails after `limitMs`.
  void runToRound(PeerId id, Round r, std::uint64_t limitMs) {
    const std::uint64_t end = now + limitMs;
    while (nodes.at(id).engine->nextRound() < r) {
      REQUIRE_MESSAGE(now < end, "node ", id, " did not reach round ", r, " within ", limitMs, " ms");
      tick();
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
    net.attach(id);
    transports[id] = std::make_unique<engine::InprocTransport>(net, id);
    engines[id] = std::make_unique<engine::SyncEngine>(id, 0, p.makeNode(algorithm, id, 0), *transports[id]);
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
  cl.runToRound(0, 100, 60000);
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
  cl.runToRound(0, 50, 60000);
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

// The daemon's checkpoint files across a crash (issue 27: the node in-process with its checkpoint store and
// executor; issue 28: rotation never keeps a file that does not verify in place of one that does). Node 2
// writes a checkpoint every 10 rounds through the daemon's writer into a directory of its own; it crashes,
// a torn file with a newer round appears beside its checkpoints, and it restarts as the daemon does
// (resumeFromNewest): from its newest checkpoint that verifies, the torn file set aside, then syncs with the
// others and trains to the end, where its last checkpoint is written.
TEST_CASE("in-process: a crashed node restarts from its checkpoint files - a torn newer file is set aside") {
  Problem p(6, {.name = "lead", .bits = 2});
  Cluster cl(p, "prox_lead", 5, 1000);  // the others must still train when it is back (~5 ms a round)
  NodeFiles& files = cl.useFiles(2, 10);
  for (PeerId id = 0; id < 5; ++id) cl.start(id);
  cl.runToRound(2, 95, 60000);
  const auto before = files.store.list();
  REQUIRE(!before.empty());
  const Round newest = before.front().first;
  CHECK(newest % 10 == 0);
  CHECK(newest >= 90);
  CHECK(before.size() == 3);  // keep_checkpoints = 3: rotation at work
  cl.crash(2);
  std::ofstream(files.dir / "checkpoints" / "ckpt-950.gsc", std::ios::binary) << "torn";
  const std::uint64_t downUntil = cl.now + 500;  // the others declare it dead meanwhile
  while (cl.now < downUntil) cl.tick();
  cl.start(2, 1);
  const Node& n = cl.nodes.at(2);
  CHECK(n.life->resumed());
  CHECK(n.life->resumeRound() == newest);
  CHECK(std::filesystem::exists(files.dir / "checkpoints" / "ckpt-950.gsc.unusable"));
  cl.runToEnd(200000);
  for (const auto& [id, node] : cl.nodes) {
    CAPTURE(id);
    CHECK_MESSAGE(node.error.empty(), node.error);
    CHECK(node.life->state() == NodeState::Done);
    CHECK(node.engine->nextRound() == 1000);
  }
  CHECK(dualSum(cl).lpNorm<Eigen::Infinity>() < 1e-4);
  const auto after = files.store.list();
  REQUIRE(!after.empty());
  CHECK(after.front().first == 1000);  // the last checkpoint, written at the end
  CHECK(after.size() == 3);
  CHECK(std::filesystem::exists(files.dir / "model.npy"));
  CHECK(files.writer.written().round == 1000);
}

namespace {

// Long enough that both sides still train when the cut heals (a round takes ~5 ms of the fake clock).
constexpr Round kSplitRounds = 12000;

struct HealResult {
  std::map<PeerId, unsigned> rejoins;  // lives begun after a death verdict, by node
  std::map<PeerId, std::uint64_t> transfers;
  std::string table;                   // one line a node, for failure messages
};

// `n` Prox-LEAD nodes on a ring train; at node 0's round 50 the network splits into `islands` (a node's
// island by id) for `cutMs`, then heals; every node must finish. Returns who rejoined.
// With `staggerMs`, the heal is link by link: each pair across the cut is joined again at its own moment
// within staggerMs after the cut ends, and frames and messages sent across it meanwhile wait for the link
// (as TCP connections come back one by one and ZeroMQ sends what it queued); without, all links come back
// at once and what was sent across the cut is lost.
HealResult splitAndHeal(std::uint32_t n, const std::map<PeerId, int>& islands, std::uint64_t cutMs,
                        std::uint64_t latencySeed = 0, std::uint64_t staggerMs = 0) {
  Problem p(n, {.name = "lead", .bits = 2});
  Cluster cl(p, "prox_lead", n, kSplitRounds);
  Rng delays(latencySeed);
  if (latencySeed) cl.latency = [&] { return 1 + delays.below(30); };  // 1-30 ms per membership message
  cl.holdAcrossCut = staggerMs > 0;
  for (PeerId id = 0; id < n; ++id) cl.start(id);
  cl.runToRound(0, 50, 60000);
  cl.islands = islands;
  const std::uint64_t healAt = cl.now + cutMs;
  Rng stagger(latencySeed * 31 + 1);
  for (const auto& [a, ia] : islands)
    for (PeerId b = 0; b < n; ++b)
      if (!islands.count(b) || islands.at(b) != ia)
        cl.rejoinedAt[{std::min(a, b), std::max(a, b)}] = healAt + (staggerMs ? stagger.below(staggerMs) : 0);
  while (cl.now < healAt + staggerMs) cl.tick();
  cl.islands.clear();
  cl.rejoinedAt.clear();
  cl.runToEnd(300000);
  HealResult r;
  std::ostringstream s;
  for (const auto& [id, node] : cl.nodes) {
    r.rejoins[id] = node.rejoins;
    r.transfers[id] = node.engine->stats().states_received;
    s << "node " << id << " (island " << (islands.count(id) ? islands.at(id) : 0) << "): " << node.rejoins
      << " rejoins, incarnation " << node.incarnation << ", " << nodeStateName(node.life->state()) << " at round "
      << node.engine->nextRound() << (node.error.empty() ? "" : ", error: " + node.error) << "\n";
    CHECK(node.error.empty());
    CHECK(node.life->state() == NodeState::Done);
    CHECK(node.engine->nextRound() == kSplitRounds);
  }
  CHECK(dualSum(cl).lpNorm<Eigen::Infinity>() < 1e-4);
  s << "healed at " << healAt << " ms, all done at " << cl.now << " ms\n";
  r.table = s.str();
  return r;
}

}  // namespace

// Issue 28: healing a one-node cut made every other node rejoin. docs/daemon.md, "Partitions and isolation".
TEST_CASE("in-process: a node cut off and healed is the only one to rejoin") {
  const HealResult r = splitAndHeal(5, {{2, 1}}, 5000);
  INFO(r.table);
  MESSAGE(r.table);
  CHECK(r.rejoins.at(2) == 1);
  for (const auto& [id, k] : r.rejoins)
    if (id != 2) CHECK(k == 0);
}

// The larger side stays; the smaller one rejoins through it, as new incarnations.
TEST_CASE("in-process: a 3/2 split healed - only the smaller side rejoins") {
  const HealResult r = splitAndHeal(5, {{3, 1}, {4, 1}}, 5000);
  INFO(r.table);
  MESSAGE(r.table);
  for (const auto& [id, k] : r.rejoins) CHECK(k == (id >= 3 ? 1u : 0u));
}

// Sides of equal size: the one holding the lowest node id stays.
TEST_CASE("in-process: a 4/4 split healed - only the side without node 0 rejoins") {
  const HealResult r = splitAndHeal(8, {{4, 1}, {5, 1}, {6, 1}, {7, 1}}, 5000);
  INFO(r.table);
  MESSAGE(r.table);
  for (const auto& [id, k] : r.rejoins) CHECK(k == (id >= 4 ? 1u : 0u));
}

// The same 4/4 split with membership messages delayed 1-30 ms each (seeded) and cuts of 2-6 s, healed at
// once or link by link within 0.3 s. On real processes in network namespaces, whose links come back one by
// one, one to three nodes of the winning side also rejoined (docs/results.md §12); here, before a member
// held dead stopped being believed about third parties (membership/membership.h), 15 winners rejoined in 40
// such schedules. (Cuts end well before either side finishes its rounds alone: a side that finished left.)
// More seeds or a slower heal: GOSSIP_SPLIT_SEEDS=40 GOSSIP_SPLIT_STAGGER_MS=3000 (docs/results.md §12 has
// what a heal slower than the suspicion timeout still does).
TEST_CASE("in-process: 4/4 splits under seeded message delays - healed at once or link by link - only the side without node 0 rejoins") {
  const char* seedsEnv = std::getenv("GOSSIP_SPLIT_SEEDS");
  const char* staggerEnv = std::getenv("GOSSIP_SPLIT_STAGGER_MS");
  const std::uint64_t seeds = seedsEnv && *seedsEnv ? std::stoull(seedsEnv) : 10;
  const std::uint64_t slowest = staggerEnv && *staggerEnv ? std::stoull(staggerEnv) : 300;
  for (const std::uint64_t staggerMs : {std::uint64_t{0}, slowest}) {
    std::ostringstream extra;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      CAPTURE(staggerMs);
      CAPTURE(seed);
      Rng rng(seed);
      const std::uint64_t cutMs = 2000 + rng.below(4000);
      const HealResult r = splitAndHeal(8, {{4, 1}, {5, 1}, {6, 1}, {7, 1}}, cutMs, seed, staggerMs);
      INFO(r.table);
      for (const auto& [id, k] : r.rejoins) {
        CHECK(k == (id >= 4 ? 1u : 0u));
        if (id < 4 && k > 0) extra << " seed " << seed << ": node " << id;
      }
    }
    MESSAGE("heal within ", staggerMs, " ms, ", seeds, " seeds: winning-side rejoins:",
            extra.str().empty() ? std::string(" none") : extra.str());
  }
}
