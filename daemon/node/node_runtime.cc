// Threads and shared state (docs/daemon.md, "Threads"). The node thread runs run(): the engine's rounds,
// status files, the trainer bridge. Checkpoint writes and periodic evaluations go to the background
// worker (background.h; checkpoint_store.h and evaluation.h say what they share with it). The membership
// thread (MembershipRunner, daemon/node/membership_runner.h) owns the peer::Membership and calls into
// PeerLinks (peer_links.h, which lists the fields both threads touch and their guards). Fields here that
// the membership thread reads: id, advertised, zmq, c, t0 (set before it starts, never written after).
// incarnation is written only in rejoinAsNewIncarnation, with the membership thread stopped. The
// Membership itself, its events and the membership frames it refused live in the runner under its own
// mutex; the node thread reads them through it as copies. Lock order: the runner's mutex, then
// PeerLinks' (one at a time), then the transport's own. suspicions, refutations and deaths are the node thread's only.
#include "daemon/node/node_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/serial.h"
#include "daemon/config/advertise.h"
#include "daemon/monitor/cluster_status.h"
#include "daemon/monitor/cluster_view.h"
#include "daemon/monitor/dashboard.h"
#include "daemon/monitor/drift_watch.h"
#include "daemon/config/http_address.h"
#include "daemon/monitor/http_server.h"
#include "daemon/log/log.h"
#include "daemon/monitor/metrics.h"
#include "daemon/node/background.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/evaluation.h"
#include "daemon/node/membership_runner.h"
#include "daemon/node/model_meta.h"
#include "daemon/node/model_out.h"
#include "daemon/node/node_status.h"
#include "daemon/node/peer_links.h"
#include "daemon/node/status_gossip.h"
#include "daemon/node/trainer_input.h"
#include "daemon/node/sim_setup.h"
#include "daemon/bridge/trainer_bridge.h"
#include "engine/frame.h"
#include "engine/node_engine.h"
#include "engine/round_driver.h"
#include "peer/membership.h"
#include "peer/zmq_transport.h"
#include "sim/simulator.h"
#include "training/smoothness.h"

namespace gossip::daemon {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Set by the SIGTERM/SIGINT handler, read by the node's thread. A lock-free atomic is both
// async-signal-safe and ordered across threads (a volatile sig_atomic_t is only the former).
std::atomic<bool> gStop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag is written from a signal handler");
extern "C" void onStopSignal(int) { gStop.store(true, std::memory_order_relaxed); }

std::uint64_t msSince(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

void writeTextAtomic(const fs::path& path, const std::string& text, bool durable = true) {
  writeFileAtomic(path, std::as_bytes(std::span(text)), durable);
}

}  // namespace

void installStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

struct NodeRuntime::Impl {
  Config c;
  PeerId id;
  fs::path dir;
  Incarnation incarnation = 0;
  // Loggers (daemon/log/log.h): the node's lifecycle and rounds, and the members' events.
  std::shared_ptr<logging::Loggers> loggers;
  logging::Logger nodeLog = loggers->get("node");
  logging::Logger memberLog = loggers->get("membership");
  std::unique_ptr<SimProblem> problem;
  // The periodic evaluations use the first monitor.eval_test_max test rows (cheap, every eval_every
  // rounds); the last round's model is evaluated once on the whole test set, the number a user of this
  // node's model gets (issue 12: the head alone made single nodes look better or worse than they are).
  std::optional<training::Dataset> evalSet;   // the head, when it is shorter than the whole set
  std::optional<training::Dataset> fullTest;  // the whole test set
  const training::Dataset* periodicSet() const { return evalSet ? &*evalSet : fullTest ? &*fullTest : nullptr; }
  std::size_t accuracySamples = 0;  // test rows behind `accuracy`
  // Checkpoint writes and periodic evaluations run here, off the rounds (background.h). Drained before
  // the fields its tasks read go (~Impl), before a rejoin and before the process ends.
  std::unique_ptr<Background> background = std::make_unique<ThreadBackground>();
  CheckpointStore checkpoints{dir / "checkpoints", c.node.keep_checkpoints, nodeLog};
  std::unique_ptr<CheckpointWriter> checkpointWriter;  // once the newest checkpoint was loaded
  std::unique_ptr<PeriodicEvaluation> evaluation;      // with monitor.eval_every and a test set
  std::unique_ptr<peer::ZmqTransport> zmq;
  std::string advertised;  // what peers connect to: node.advertise, or the bound endpoint (daemon/config/advertise.h)
  std::unique_ptr<PeerLinks> links;  // transport destinations, traffic by peer, the engine's frames
  std::unique_ptr<engine::NodeEngine> engine;
  std::unique_ptr<engine::RoundDriver> driver;  // begins and ends the engine's rounds; rebuilt with it
  std::unique_ptr<MembershipRunner> membership;  // started by run(); stopped before the fields it uses go
  Clock::time_point t0 = Clock::now();
  bool resumed = false;                     // loaded a checkpoint (or rejoined: see rejoinAsNewIncarnation)
  bool rejoined = false;                    // declared dead while running on, now a new incarnation
  Round resumeRound = 0;
  enum class Phase { Joining, Syncing, Training, Finishing } phase = Phase::Joining;
  std::string state = "joining";
  std::uint64_t phaseSince = 0;
  double accuracy = -1;
  double lastLoss = 0;
  double lastDisagreement = std::numeric_limits<double>::quiet_NaN();  // NaN until a round mixed
  double lastGamma = std::nan("");  // CHOCO's consensus step after the last round (algorithms/choco.h)
  DriftWatch drift;  // warns once when this node's disagreement keeps growing (daemon/monitor/drift_watch.h)
  std::uint64_t nextStatus = 0, nextProgress = 0;
  std::uint64_t suspicions = 0, refutations = 0, deaths = 0;
  std::vector<std::string> extraSeeds;  // members known before a rejoin
  std::uint64_t stateAskedAt = 0;
  // Monitoring (docs/monitoring.md): /metrics and /status are rebuilt with status.json.
  Histogram roundDurations{std::vector<double>(std::begin(kRoundDurationBuckets), std::end(kRoundDurationBuckets))};
  Clock::time_point roundBeganAt{};
  std::unique_ptr<HttpServer> http;

  // ---- trainer.enable (docs/trainer.md): a trainer process drives the rounds ----
  std::unique_ptr<TrainerInput> trainer;
  TrainerBridge* bridge = nullptr;  // trainer->bridge(), or none

  // ---- /cluster (daemon/monitor/cluster_view.h): status gossip, events, the view graph's summary ----
  std::unique_ptr<StatusGossip> statusGossip;

  // The membership thread calls into fields declared after `membership`: it stops before they go.
  ~Impl() {
    if (membership) membership->stop();
    background->drain();  // its tasks read the writer, the evaluation and the test set
  }

  Impl(Config config, std::shared_ptr<logging::Loggers> logs)
      : c(std::move(config)), id(c.node.id), dir(c.node.data_dir), loggers(std::move(logs)) {
    // Cheap checks first: a port in use or an unusable data directory fails before the data is loaded.
    std::error_code ec;
    fs::create_directories(dir / "checkpoints", ec);
    if (ec) throw ConfigError("node.data_dir: cannot create '" + (dir / "checkpoints").string() + "': " + ec.message());
    peer::ZmqOptions zo;
    zo.link_bytes_per_second = c.faults.link_mbit * 1e6 / 8;
    if (c.security.enable) zo.curve = std::make_shared<const peer::CurveKeys>(peer::loadCurveKeys(c.security.keys_dir, id));
    zmq = std::make_unique<peer::ZmqTransport>(id, c.node.listen, zo);
    if (c.security.enable)
      nodeLog->info("CurveZMQ on, {} keys listed; self-test: an unlisted key was refused", zo.curve->allowed.size());
    advertised = advertisedEndpoint(c.node, zmq->endpoint());
    // Published at once: a launcher starts the other nodes with this address while we load our data
    // (their joins are retried with backoff until our membership runs).
    writeTextAtomic(dir / "endpoint", advertised + "\n");
    // Bound now (a port in use fails before the data is loaded); serves once the pages exist, below.
    if (!c.node.http.empty()) {
      const auto addr = parseHttpAddress(c.node.http);
      if (!addr) throw ConfigError("node.http: cannot parse '" + c.node.http + "' (expected HOST:PORT)");
      http = std::make_unique<HttpServer>(*addr, loggers->get("http"));
    }
    readIncarnation();
    if (c.trainer.enable) {
      trainer = std::make_unique<TrainerInput>(c, id, incarnation, dir, *loggers, [this] { return msSince(t0); }, gStop);
      bridge = &trainer->bridge();
      // Stopped before any trainer gave the first model: run() exits at once.
      if (!trainer->start(!checkpoints.empty())) return;
    } else {
      setupData();
    }
    links = std::make_unique<PeerLinks>(id, incarnation, *zmq, memberLog);
    statusGossip = std::make_unique<StatusGossip>(c, id, *links, http.get());
    statusGossip->setIncarnation(incarnation);
    makeEngine();
    loadNewestCheckpoint();
    checkpointWriter = std::make_unique<CheckpointWriter>(checkpoints, dir, *background, [this] { return msSince(t0); }, nodeLog);
    if (trainer) {
      if (trainer->placeholder() && !resumed) {  // no checkpoint could be read after all: take a trainer's model
        if (!trainer->waitForModel()) {
          driver.reset();  // it refers to the engine
          engine.reset();
          return;
        }
        makeEngine();
      }
      trainer->ready(engine->node().algorithm().x(), resumed ? resumeRound : 0);
    }
    makeMembership();
    if (http) {
      writeStatus(msSince(t0), true);  // the first pages, so that no request ever finds none
      http->publish("/loglevel", "application/json", loggers->levelsJson() + "\n");
      http->onPut("/loglevel", [this](std::string_view query) { return putLogLevel(query); });
      http->start();
      publishDashboard(*http);
      writeTextAtomic(dir / "http_port", std::to_string(http->port()) + "\n");
    }
    nodeLog->info("incarnation {} listening on {}{}{}{}", incarnation, zmq->endpoint(),
                  advertised != zmq->endpoint() ? " as " + advertised : "", http ? ", http " + http->url() : "",
                  resumed ? ", resumed at round " + std::to_string(resumeRound) : "");
  }

  // PUT /loglevel?level=L[&logger=NAME] (docs/daemon.md#logging), on the HTTP server's thread: the
  // loggers' levels are atomics and the Loggers object is otherwise immutable, so no lock is needed.
  HttpServer::Answer putLogLevel(std::string_view query) {
    const auto a = logging::applyLevelRequest(*loggers, query);
    if (a.status != 200) return {a.status, a.body};
    http->publish("/loglevel", "application/json", a.body);
    nodeLog->info("log levels set by PUT /loglevel?{}: {}", query, loggers->levelsJson());
    return {a.status, a.body};
  }

  void setupData() {
    // Shards are cut for max(cluster.nodes, id + 1) nodes, as `sim` does for joiners: a late joiner with
    // an id beyond the starting cluster still gets a shard of its own. Only this node's rows are kept
    // (IDX files are streamed: the whole training set is never in memory).
    Config pc = c;
    pc.cluster.nodes = std::max<std::uint32_t>(c.cluster.nodes, id + 1);
    const OneNode only{.id = id, .keep_test = c.monitor.eval_every > 0};
    problem = buildSimProblem(pc, &only);
    if (const auto& a = problem->auto_step) {
      // Every daemon computes the same number from the shared data (daemon/node/sim_setup.cc, agreeOnStep).
      nodeLog->info("automatic step lr = {:.6g} ({}; the largest L over the {} nodes' shards: {:.6g} for the "
                    "whole local objective, {:.6g} per sample)",
                    a->lr, training::autoStepRule(c.algorithm.estimator), a->nodes, a->agreed.full, a->agreed.sample);
    }
    if (problem->test) {
      fullTest = std::move(*problem->test);
      const std::size_t head = c.monitor.eval_test_max;
      if (head != 0 && head < fullTest->samples()) evalSet = training::headOf(*fullTest, head);
    }
    problem->test.reset();
    problem->setup.test = nullptr;
    if (c.monitor.eval_every && periodicSet()) evaluation = std::make_unique<PeriodicEvaluation>(*problem->model, *periodicSet(), *background);
  }

  void readIncarnation() {
    const fs::path f = dir / "incarnation";
    if (fs::exists(f)) {
      std::ifstream in(f);
      unsigned long long prev = 0;
      if (!(in >> prev)) throw DataError("'" + f.string() + "' does not hold a number");
      incarnation = prev + 1;
    }
    writeTextAtomic(f, std::to_string(incarnation) + "\n");
  }

  void makeEngine() {
    driver.reset();  // it refers to the engine being replaced
    auto node = trainer ? trainer->makeNode(incarnation) : sim::makeNode(problem->setup, id, incarnation);
    engine = std::make_unique<engine::NodeEngine>(id, incarnation, std::move(node), links->engineTransport());
    engine::LinkOptions lo;
    lo.topology = topologyParams(c.cluster);
    lo.hello_timeout_ms = c.cluster.link_timeout_ms;
    lo.retransmit_ms = std::max<std::uint64_t>(50, c.cluster.probe_interval_ms);
    engine->enableLinks(lo);
    // Replica methods begin a round only once every edge the view wants is agreed, in every round and for
    // every life, not only at a cluster's round 0: a node that began while an edge was still being agreed
    // ran its rounds alone at compute speed (a node rejoining after a healed 4/4 partition went from round
    // 31370 to the last, 40000, in under 2 s and left; tests/netns/netns_split.sh). Waiting is bounded: an
    // edge to a member that died goes with the member.
    driver = std::make_unique<engine::RoundDriver>(
        *engine,
        engine::RoundDriverOptions{.rounds = c.algorithm.rounds,
                                   .barrier = engine::StartBarrier::EveryRound,
                                   .roundTimeoutMs = c.algorithm.round_timeout_ms},
        [this](Round t, std::uint64_t now) { return !trainer || trainer->input(*engine, t, now); });
  }

  void loadNewestCheckpoint() {
    const auto next = checkpoints.loadNewest(id, [this](ByteReader& r) { engine->node().load(r); });
    if (!next) return;
    // The edges were with the previous life's neighbours, who drop theirs when they see our new
    // incarnation: keep the model, drop the edges (and with them the dual shares).
    engine->dropAllEdges();
    resumed = true;
    resumeRound = *next;
  }

  void makeMembership() {
    peer::MemberInfo self;
    self.id = id;
    self.incarnation = incarnation;
    self.endpoint = advertised;
    peer::MembershipOptions mo;
    mo.probe_interval = std::chrono::milliseconds(c.cluster.probe_interval_ms);
    mo.probe_timeout = std::chrono::milliseconds(c.cluster.probe_timeout_ms);
    mo.indirect_probes = c.cluster.indirect_probes;
    mo.suspicion_mult = c.cluster.suspicion_mult;
    mo.recontact_interval = std::chrono::milliseconds(c.cluster.recontact_interval_ms);
    std::vector<std::string> seeds;
    for (const auto& s : c.cluster.seeds)
      if (s != zmq->endpoint() && s != advertised) seeds.push_back(s);  // a seed list may name this node
    for (const auto& s : extraSeeds)
      if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
    auto m = std::make_unique<peer::Membership>(
        self, seeds, mo, [this](PeerId to, const std::string& ep, Bytes payload) { links->sendMembership(to, ep, std::move(payload)); },
        deriveSeed({c.cluster.seed, id, incarnation, 0x5713ull}));
    if (membership) return membership->restart(std::move(m));  // a rejoin: same runner, new life
    MembershipRunner::Hooks hooks;
    hooks.frame = [this](const engine::RawFrame& f) { links->countReceived(f, msSince(t0)); };
    hooks.changed = [this](const auto& events, const auto& table) { links->followMembers(events, table); };
    membership = std::make_unique<MembershipRunner>(std::move(m), *zmq, std::move(hooks), mo.probe_timeout / 2);
    statusGossip->attach(*membership);
  }

  void pumpIncoming(std::uint64_t now) {
    links->pump(now, [this](const engine::RawFrame& f, std::uint64_t t) { statusGossip->receive(f, t); });
  }

  // Applies membership changes to the engine (the transport's were applied by followMembers, on the
  // membership thread); logs each event once.
  void onMembership(std::uint64_t now) {
    const auto events = membership->takeEvents();
    if (events.empty()) return;
    for (const auto& [e, stamp] : events) {
      using K = peer::MembershipEvent::Kind;
      const char* what = e.kind == K::Joined ? "joined" : e.kind == K::Suspected ? "suspected" : e.kind == K::Refuted ? "alive again (refuted)" : e.kind == K::Died ? "declared dead" : "left";
      const char* kind = e.kind == K::Joined ? (e.incarnation > 0 ? "rejoined" : "joined") : e.kind == K::Suspected ? "suspected"
                         : e.kind == K::Refuted ? "refuted" : e.kind == K::Died ? "dead" : "left";
      statusGossip->noteEvent(e.id, e.incarnation, kind, "member " + std::to_string(e.id) + " (incarnation " + std::to_string(e.incarnation) + ") " + what);
      if (e.kind == K::Suspected) ++suspicions;
      if (e.kind == K::Refuted) ++refutations;
      if (e.kind == K::Died) ++deaths;
      // Wall-clock milliseconds on event lines, from when the membership thread took the event (the node
      // thread may log it seconds later): fault scripts measure detection times across processes.
      memberLog->info("member {} (incarnation {}) {} [t={}]", e.id, e.incarnation, what, static_cast<long long>(stamp));
    }
    installView(now);
  }

  void installView(std::uint64_t now) {
    // Joining: the engine gets its first view when the node starts. Finishing: no new edges for a node
    // that will not mix any more (dead peers' frames are released when we leave).
    if (phase == Phase::Joining || phase == Phase::Finishing) return;
    engine->setMembers(membership->alive(), engine->nextRound(), now);
    if (engine->graphFallback())
      nodeLog->warn("{} cannot serve {} members; using the fallback graph (docs/daemon.md)", c.cluster.topology,
                    membership->alive().size());
  }

  bool lateStarter() const { return resumed || incarnation > 0 || id >= c.cluster.nodes; }

  void startTraining(Round first, std::uint64_t now) {
    phase = Phase::Training;
    state = "training";
    engine->setMembers(membership->alive(), first, now);
    engine->holdEdges(false, now);
    nodeLog->info("training from round {} with {} members", first, membership->alive().size());
  }

  void stepJoining(std::uint64_t now) {
    if (!membership->joined()) return;
    const auto alive = membership->alive();
    const bool full = alive.size() >= c.cluster.nodes;
    if (!full && now < phaseSince + c.cluster.start_timeout_ms && !lateStarter()) return;
    if (!lateStarter()) return startTraining(0, now);
    // A restarted or late node asks a neighbour of its view for the current model and round; it agrees
    // to no edge before it has them (it would be asked to mix rounds it has not reached).
    engine->holdEdges(true, now);
    engine->setMembers(alive, resumed ? resumeRound : 0, now);
    const auto& nbrs = engine->viewNeighbors();
    if (nbrs.empty()) {
      engine->holdEdges(false, now);
      return startTraining(resumed ? resumeRound : 0, now);
    }
    engine->requestState(nbrs.front(), engine->nextRound());
    stateAskedAt = now;
    phase = Phase::Syncing;
    state = "syncing";
    phaseSince = now;
  }

  void stepSyncing(std::uint64_t now) {
    if (auto r = engine->takeStateRound()) {
      // A restarted or new node takes the neighbour's round with its model (DESIGN.md §4: linked nodes
      // stay within a round of each other): its own, from a checkpoint, is behind. A node that was declared
      // dead while it ran on (a cut link, a partition) keeps the lower of the two rounds: the side that was
      // cut off trains alone, faster, and whoever took its round would wait for neighbours far behind
      // (tests/netns/netns_cut.sh: node 0 rejoined with the cut-off node's round 107400 while its other
      // neighbours were at 9909, and stopped). The cut-off node itself rejoins too and so comes back down.
      const Round next = rejoined ? std::min(*r, resumeRound) : *r;
      if (bridge) bridge->modelChanged();  // the neighbour's model replaced ours
      nodeLog->info("state transfer done, continuing at round {}", next);
      return startTraining(next, now);
    }
    if (now > stateAskedAt + 500) {
      // The neighbour may not know us yet (our join is still spreading): ask again, maybe another one.
      const auto& nbrs = engine->viewNeighbors();
      if (!nbrs.empty()) engine->requestState(nbrs[(now / 500) % nbrs.size()], engine->nextRound());
      stateAskedAt = now;
    }
    if (now > phaseSince + 5000) {
      nodeLog->warn("no state transfer within 5 s, starting from its own model");
      startTraining(resumed ? resumeRound : 0, now);
    }
  }

  // Returns false when the run is over. The driver (engine/round_driver.h, set up in makeEngine) decides
  // when a round begins and ends; this does the node's work around what it reports.
  bool stepTraining(std::uint64_t now) {
    if (!engine->inRound() && gStop) return false;
    const engine::RoundStep s = driver->step(now);
    switch (s.event) {
      case engine::RoundEvent::Finished:
        return false;
      case engine::RoundEvent::Waiting:
        return true;
      case engine::RoundEvent::Began:
        roundBeganAt = Clock::now();
        progressed = true;
        return true;
      case engine::RoundEvent::Ended:
        break;
    }
    auto& e = *engine;
    const Round t = s.round;
    if (bridge && !bridge->finishRound(e.node().algorithm().x(), t + 1, t + 1 >= c.algorithm.rounds))
      bridge->modelChanged();  // a round the trainer did not see
    roundDurations.observe(std::chrono::duration<double>(Clock::now() - roundBeganAt).count());
    lastLoss = e.node().lastLoss();
    lastDisagreement = e.node().disagreement();
    const double gamma = e.node().algorithm().consensusStep();
    if (gamma != lastGamma && std::isfinite(gamma) && std::isfinite(lastGamma)) {  // CHOCO halved its step
      nodeLog->info("consensus step gamma {:.6g} -> {:.6g} at round {} (this node's disagreement kept growing)",
                    lastGamma, gamma, t + 1);
    }
    lastGamma = gamma;
    if (const auto w = drift.afterRound(t + 1, lastDisagreement, e.node().algorithm().x())) {
      nodeLog->warn("warning: {}", *w);  // "warning: " kept: tests/integration/drift_warning.sh counts the lines
    }
    nodeLog->debug("round {} mixed: loss {:.4f}, disagreement {:.4g}", t + 1, lastLoss, lastDisagreement);
    afterRound(t + 1);
    progressed = true;
    return true;
  }

  // Set when a step began or ended a round: the loop then goes round again at once instead of sleeping,
  // so the next round begins as soon as the last one ended (sleeping there cost up to the poll period,
  // 2 ms, per round).
  bool progressed = false;

  void afterRound(Round done) {
    if (evaluation && done % c.monitor.eval_every == 0) evaluation->submit(done, engine->node().algorithm().x());
    if (c.node.checkpoint_every && done % c.node.checkpoint_every == 0) checkpoint(done);
  }

  // Serialized here (the state changes next round), written by the background (checkpoint_store.h).
  void checkpoint(Round next) {
    CheckpointJob job;
    job.next = next;
    job.body = runStateBody(id, next, [this](ByteWriter& w) { engine->node().save(w); });
    const auto& x = engine->node().algorithm().x();
    job.model.assign(x.data(), x.data() + x.size());
    job.meta = bridge ? nlohmann::json{{"model", "external"}, {"dim", x.size()}, {"layout", "the trainer's flat parameter vector"},
                                       {"round", next}, {"node", id}, {"incarnation", incarnation}}
                      : modelMeta(c, *problem->model, problem->train, next, id, incarnation);
    checkpointWriter->submit(std::move(job));
  }

  // A finished periodic evaluation (evaluation.h) becomes the node's accuracy.
  void takeEvaluation() {
    if (!evaluation) return;
    if (const auto r = evaluation->take()) {
      accuracy = r->accuracy;
      accuracySamples = r->samples;
    }
  }

  // This tick's snapshot (node_status.h): status.json, /status and /metrics render the same numbers.
  void writeStatus(std::uint64_t now, bool force) {
    if (!force && now < nextStatus) return;
    nextStatus = now + c.monitor.status_every_ms;
    statusGossip->noteViewGraph(engine->viewGraph());
    const NodeStatus s = snapshot(now);
    statusGossip->refresh(now, s);  // this node's summary and /cluster
    std::string text = renderStatusJson(s);
    writeTextAtomic(dir / "status.json", text, /*durable=*/false);  // rewritten every tick
    if (http) {
      http->publish("/status", "application/json", std::move(text));
      http->publish("/metrics", "text/plain; version=0.0.4; charset=utf-8", renderMetrics(toMetrics(s)));
    }
  }

  NodeStatus snapshot(std::uint64_t now) const {
    const auto& st = engine->stats();
    const auto z = zmq->stats();
    NodeStatus s;
    s.id = id;
    s.incarnation = incarnation;
    s.state = static_cast<NodeState>(nodeStateFromName(state));
    s.endpoint = advertised;
    s.listen = zmq->endpoint();
    s.round = engine->nextRound();
    s.rounds = c.algorithm.rounds;
    s.loss = lastLoss;
    s.disagreement = lastDisagreement;
    s.gamma = lastGamma;
    s.drift_warning = drift.warning();
    s.accuracy = accuracy;
    s.accuracy_samples = accuracySamples;
    s.alive = membership->alive().size();
    s.neighbors = engine->links().size();
    s.model_bytes_sent = st.model_bytes_sent;
    s.membership_bytes_sent = links->membershipBytes();
    s.status_bytes_sent = statusGossip->bytesSent();
    s.bytes_sent = st.model_bytes_sent + st.control_bytes_sent + s.membership_bytes_sent + s.status_bytes_sent;
    s.membership_messages_sent = membership->stats().messages_sent;
    s.retransmitted = st.retransmitted;
    s.messages_missing = st.messages_missing;
    s.states_sent = st.states_sent;
    s.states_received = st.states_received;
    s.compute_seconds = static_cast<double>(st.compute_ns) * 1e-9;
    // Every frame refused anywhere in this node, by reason: the engine's (header, protocol and payload
    // checks), status frames refused here, the membership's, and what the transport dropped
    // ("malformed_message": a wrong number of parts).
    s.rejected_by_reason = st.rejected;
    for (const auto& [reason, n] : statusGossip->rejected()) s.rejected_by_reason[reason] += n;
    for (const auto& [reason, n] : membership->rejected()) s.rejected_by_reason[reason] += n;
    if (z.malformed_dropped) s.rejected_by_reason["malformed_message"] += z.malformed_dropped;
    if (z.unlisted_key) s.rejected_by_reason["unlisted_key"] += z.unlisted_key;  // connections, not frames
    if (z.wrong_key_for_sender) s.rejected_by_reason["wrong_key_for_sender"] += z.wrong_key_for_sender;
    if (z.inbox_dropped) s.rejected_by_reason["inbox_full"] += z.inbox_dropped;
    if (z.membership_inbox_dropped) s.rejected_by_reason["membership_inbox_full"] += z.membership_inbox_dropped;
    for (const auto& [reason, n] : s.rejected_by_reason) s.rejected += n;
    s.disconnects = z.disconnects;
    s.suspicions = suspicions;
    s.refutations = refutations;
    s.deaths = deaths;
    const auto written = checkpointWriter->written();
    s.last_checkpoint = written.round;
    if (written.atMs) s.checkpoint_age_seconds = static_cast<double>(now - std::min(now, *written.atMs)) / 1000.0;
    if (bridge)
      s.trainer = NodeMetrics::Trainer{bridge->stateName(now), bridge->stats().rounds_served,
                                       static_cast<double>(bridge->stats().copy_ns) * 1e-9};
    s.seconds = static_cast<double>(now) / 1000.0;
    const auto traffic = links->traffic();
    for (const auto& [peer, l] : traffic.byPeer)
      if (peer < kSeedIdBase) s.links.push_back({std::to_string(peer), l.sent, l.received});
    PeerLinks::Link unknown = traffic.unknown;  // seed pseudo ids: not a node id
    for (const auto& [peer, l] : traffic.byPeer)
      if (peer >= kSeedIdBase) unknown.sent += l.sent, unknown.received += l.received;
    if (unknown.sent || unknown.received) s.links.push_back({"unknown", unknown.sent, unknown.received});
    const auto dim = static_cast<double>(engine->node().algorithm().x().size());
    if (traffic.modelPayloadBytes)
      s.compression_ratio = static_cast<double>(traffic.modelFrames) * dim * 4.0 / static_cast<double>(traffic.modelPayloadBytes);
    for (const auto& mem : membership->members()) {
      if (mem.id == id) continue;
      MemberSample p;
      p.peer = std::to_string(mem.id);
      p.up = mem.state == peer::MemberState::Alive || mem.state == peer::MemberState::Suspect;
      p.suspect = mem.state == peer::MemberState::Suspect;
      if (auto it = traffic.lastHeardMs.find(mem.id); it != traffic.lastHeardMs.end())
        p.last_heard_seconds = static_cast<double>(now - std::min(now, it->second)) / 1000.0;
      s.members.push_back(std::move(p));
    }
    if (const auto& g = statusGossip->graph()) {
      s.self_weight = g->selfWeight;
      for (const auto& [peer, weight] : g->row) s.mixing_weights.emplace_back(std::to_string(peer), weight);
      s.spectral_gap = g->spectralGap;
    }
    s.round_duration = &roundDurations;
    return s;
  }

  // Rejected frames: counted always, logged at most once per peer per minute (a hostile or broken peer
  // must not flood the log).
  std::map<PeerId, std::map<std::string, std::uint64_t>> rejectedLogged;
  std::uint64_t nextRejectLog = 60000;
  void logRejections(std::uint64_t now) {
    if (now < nextRejectLog) return;
    nextRejectLog = now + 60000;
    for (const auto& [peer, reasons] : engine->stats().rejected_by_peer) {
      std::string what;
      std::uint64_t total = 0;
      for (const auto& [reason, n] : reasons) {
        const std::uint64_t fresh = n - rejectedLogged[peer][reason];
        if (!fresh) continue;
        total += fresh;
        what += (what.empty() ? "" : ", ") + reason + " " + std::to_string(fresh);
      }
      if (total)
        nodeLog->warn("rejected {} frames from peer {} in the last minute ({})", total, peer, what);
      rejectedLogged[peer] = reasons;
    }
  }

  void progress(std::uint64_t now) {
    if (now < nextProgress) return;
    nextProgress = now + c.monitor.progress_every_ms;
    const auto& st = engine->stats();
    nodeLog->info("round {}/{}  loss {:.4f}{}  alive {}  neighbors {}  sent {:.2f} MB  [{}{}]", engine->nextRound(),
                  c.algorithm.rounds, lastLoss, accuracy >= 0 ? fmt::format("  acc {:.1f}%", 100 * accuracy) : "",
                  membership->alive().size(), engine->links().size(),
                  static_cast<double>(st.model_bytes_sent + st.control_bytes_sent + links->membershipBytes()) / 1e6, state,
                  bridge ? ", trainer " + bridge->stateName(now) : "");
  }

  // Someone declared this life dead: go on as a new incarnation with the same model and no edges.
  void rejoinAsNewIncarnation(std::uint64_t now) {
    nodeLog->warn("declared dead by the cluster; rejoining as incarnation {}", incarnation + 1);
    statusGossip->noteEvent(id, incarnation + 1, "rejoined", "this node was declared dead; rejoining as incarnation " + std::to_string(incarnation + 1));
    checkpointWriter->drain();  // the old life's checkpoints are on disk before the new life begins
    membership->stop();  // its SendFn reads `incarnation`; makeMembership starts it again with the new life
    Bytes saved;
    ByteWriter w(saved);
    engine->node().save(w);
    const Round next = engine->inRound() ? engine->mixingRound() : engine->nextRound();
    // A round the trainer waits for is abandoned with the engine: give it the model as it is.
    if (bridge) bridge->finishRound(engine->node().algorithm().x(), next, false);
    writeTextAtomic(dir / "incarnation", std::to_string(incarnation + 1) + "\n");
    incarnation += 1;
    links->setIncarnation(incarnation);
    statusGossip->setIncarnation(incarnation);
    // Rejoin through everyone we knew, not only the configured seeds (the first node has none): alive
    // members, and those we declared dead ourselves while our network was cut (they may be back).
    for (const auto& m : membership->members())
      if (m.id != id && m.state != peer::MemberState::Left) extraSeeds.push_back(m.endpoint);
    // New connections to everyone (see onMembership): ours may be stuck behind a link that was cut.
    links->forgetAll();
    driver.reset();  // it refers to the engine
    engine.reset();
    rejectedLogged.clear();  // the new engine counts from zero
    links->resetEngineTransport();
    makeEngine();
    ByteReader r(saved, "node state");
    engine->node().load(r);
    engine->dropAllEdges();
    resumed = true;
    rejoined = true;
    resumeRound = next;
    makeMembership();
    membership->start();
    phase = Phase::Joining;
    state = "joining";
    phaseSince = now;
  }

  int run() {
    if (!engine) {
      nodeLog->info("stopped before a trainer attached");
      return 0;
    }
    phaseSince = 0;
    membership->start();
    bool running = true;
    std::uint64_t finishDeadline = 0;
    for (;;) {
      const std::uint64_t now = msSince(t0);
      pumpIncoming(now);
      if (bridge) {
        bridge->poll(now, &engine->node().algorithm().x(), engine->nextRound());
        if (std::isfinite(bridge->reportedAccuracy())) {
          accuracy = bridge->reportedAccuracy();
          accuracySamples = 0;  // the trainer's own test set, of a size it does not report
        }
      }
      takeEvaluation();
      checkpointWriter->rethrowFailure();  // a write on the background failed: the run ends with its error
      onMembership(now);  // probes, acks and disconnect hints are the membership thread's (MembershipRunner)
      if (membership->declaredDead() && phase != Phase::Finishing) rejoinAsNewIncarnation(now);
      // While joining the engine has no view yet: frames for it wait in its queue (early edge proposals
      // are answered once the view is installed instead of being refused).
      if (phase != Phase::Joining) driver->pump(now);
      switch (phase) {
        case Phase::Joining:
          if (gStop) return stop(now, false);
          stepJoining(now);
          break;
        case Phase::Syncing:
          if (gStop) return stop(now, false);
          stepSyncing(now);
          break;
        case Phase::Training:
          running = stepTraining(now);
          if (!running) {
            if (bridge) bridge->setDone(engine->nextRound());
            phase = Phase::Finishing;
            state = gStop ? "stopped" : "done";
            if (state == "done" && fullTest) {
              // After any periodic evaluation still running: the last word is the whole test set's.
              background->drain();
              if (evaluation) (void)evaluation->take();
              accuracy = problem->model->accuracy(engine->node().algorithm().x(), *fullTest);
              accuracySamples = fullTest->samples();
            }
            checkpoint(engine->nextRound());
            finishDeadline = now + 2 * c.cluster.link_timeout_ms + c.algorithm.round_timeout_ms;
            nodeLog->info("{} at round {}; waiting for neighbours to acknowledge the last frames", state,
                          engine->nextRound());
          }
          break;
        case Phase::Finishing: {
          // Neighbours still mixing our last round need its frames (retransmitted if lost): leave once
          // all are acknowledged (replica methods) or a round deadline has passed (stateless).
          const bool acked = engine->stateless() ? now >= finishDeadline - 2 * c.cluster.link_timeout_ms
                                                 : engine->unackedFrames() == 0;
          if (acked || now >= finishDeadline) return stop(now, true);
          break;
        }
      }
      // A SIGTERM mid-round lets the round finish (bounded), so the checkpoint holds a whole round.
      if (gStop && !stopAt) stopAt = now;
      if (gStop && phase == Phase::Training && engine->inRound() && now > stopAt + 2000) return stop(now, false);
      writeStatus(now, false);
      statusGossip->gossip(now);
      progress(now);
      logRejections(now);
      if (!std::exchange(progressed, false)) {
        if (trainer && trainer->waiting())
          bridge->waitReadable(2);  // the next step is the trainer's: wake on its request
        else
          zmq->waitReadable(std::chrono::milliseconds(2));
      }
    }
  }

  std::uint64_t stopAt = 0;  // when the stop signal was first seen (ms)

  int stop(std::uint64_t now, bool checkpointed) {
    if (!checkpointed && phase == Phase::Training && !engine->inRound()) checkpoint(engine->nextRound());
    if (state != "done") state = "stopped";
    membership->leave();
    // Give the leave announcement a moment on the wire (the transport's linger flushes the rest).
    const std::uint64_t until = now + 200;
    while (msSince(t0) < until) {
      pumpIncoming(msSince(t0));
      zmq->waitReadable(std::chrono::milliseconds(10));
    }
    checkpointWriter->drain();  // the last checkpoint and model files are on disk before we say so
    writeStatus(msSince(t0), true);
    const auto& st = engine->stats();
    nodeLog->info("{} at round {}, loss {:.4f}{}, sent {:.2f} MB", state, engine->nextRound(), lastLoss,
                  accuracy >= 0 ? ", accuracy " + std::to_string(100 * accuracy).substr(0, 5) + "%" +
                                      (accuracySamples ? " (" + std::to_string(accuracySamples) + " test samples)" : "")
                                : "",
                  static_cast<double>(st.model_bytes_sent + st.control_bytes_sent + links->membershipBytes()) / 1e6);
    return 0;
  }
};

logging::Options loggerOptions(const NodeConfig& node) {
  return {.level = node.log_level, .levels = node.log_levels, .format = logging::parseFormat(node.log_format),
          .node = node.id};
}

NodeRuntime::NodeRuntime(Config config, std::shared_ptr<logging::Loggers> loggers) {
  if (!loggers) loggers = std::make_shared<logging::Loggers>(loggerOptions(config.node));
  impl_ = std::make_unique<Impl>(std::move(config), std::move(loggers));
}
NodeRuntime::~NodeRuntime() = default;
int NodeRuntime::run() { return impl_->run(); }

}  // namespace gossip::daemon
