// NodeRuntime::Impl's construction (node_runtime_impl.h says how the node is split and who touches what).
#include <algorithm>
#include <charconv>
#include <ctime>
#include <set>
#include <cstdio>
#include <random>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "daemon/config/advertise.h"
#include "daemon/config/http_address.h"
#include "daemon/monitor/dashboard.h"
#include "daemon/node/cluster_identity.h"
#include "daemon/node/node_runtime_impl.h"
#include "membership/membership.h"
#include "sim/simulator.h"
#include "transport/zmq/zmq_transport.h"
#include "training/smoothness.h"

namespace gossip::daemon {
namespace fs = std::filesystem;
using detail::writeTextAtomic;

NodeRuntime::Impl::~Impl() {
  if (membership) membership->stop();
  background->drain();  // its tasks read the writer, the evaluation and the test set
}

// Creates node.data_dir and its checkpoints/ folder (for dirLock, the first member that needs them).
const fs::path& NodeRuntime::Impl::createDataDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / "checkpoints", ec);
  if (ec) throw ConfigError("node.data_dir: cannot create '" + (dir / "checkpoints").string() + "': " + ec.message());
  return dir;
}

NodeEnvironment detail::completed(NodeEnvironment env) {
  if (!env.transport)
    env.transport = [](const Config& c) -> std::unique_ptr<peer::PeerTransport> {
      peer::ZmqOptions zo;
      zo.link_bytes_per_second = c.faults.link_mbit * 1e6 / 8;
      if (c.security.enable) zo.curve = std::make_shared<const peer::CurveKeys>(peer::loadCurveKeys(c.security.keys_dir, c.node.id));
      return std::make_unique<peer::ZmqTransport>(c.node.id, c.node.listen, zo);
    };
  if (!env.now) env.now = [] { return std::chrono::steady_clock::now(); };
  if (!env.background) env.background = [] { return std::make_unique<ThreadBackground>(); };
  if (!env.stop) env.stop = &stopRequested();
  return env;
}

NodeRuntime::Impl::Impl(Config config, std::shared_ptr<logging::Loggers> logs, StartMode start, NodeEnvironment environment)
    : c(std::move(config)), env(detail::completed(std::move(environment))), id(c.node.id), dir(c.node.data_dir),
      loggers(std::move(logs)) {
  // A stepped node runs on its caller's thread with a clock that moves only when the caller says: the HTTP
  // server's thread and the trainer's waits (on that clock) have no place in it.
  GOSSIP_CHECK(!env.stepped || (c.node.http.empty() && !c.trainer.enable),
               "a stepped node (NodeEnvironment::stepped) runs without node.http and without trainer.enable");
  if (start == StartMode::Fresh) moveRunAside();  // under the lock, before anything here is read
  // Cheap checks first: a data directory in use or unusable (createDataDir, dirLock) or a port in use fails
  // before the data is loaded.
  net = env.transport(c);
  if (const auto* z = dynamic_cast<const peer::ZmqTransport*>(net.get()); z && c.security.enable)
    // Its constructor ran the self-test (it throws if an unlisted key was let in).
    nodeLog->info("CurveZMQ on, {} keys listed; self-test: an unlisted key was refused", z->listedKeys());
  advertised = advertisedEndpoint(c.node, net->endpoint());
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
    trainer = std::make_unique<TrainerInput>(c, id, incarnation, dir, *loggers, [this] { return nowMs(); }, *env.stop);
    bridge = &trainer->bridge();
    // Stopped before any trainer gave the first model: run() exits at once.
    if (!trainer->start(!checkpoints.empty())) return;
  } else {
    setupData();
  }
  links = std::make_unique<PeerLinks>(id, incarnation, *net, memberLog);
  statusGossip = std::make_unique<StatusGossip>(c, id, *links, http.get());
  statusGossip->setIncarnation(incarnation);
  makeEngine();
  loadNewestCheckpoint();
  checkpointWriter = std::make_unique<CheckpointWriter>(checkpoints, dir, *background, [this] { return nowMs(); }, nodeLog);
  if (trainer) {
    if (trainer->placeholder() && !life.resumed()) {  // no checkpoint could be read after all: take a trainer's model
      if (!trainer->waitForModel()) {
        driver.reset();  // it refers to the engine
        engine.reset();
        return;
      }
      makeEngine();
    }
    trainer->ready(engine->node().algorithm().x(), life.resumed() ? life.resumeRound() : 0);
  }
  makeMembership();
  if (http) {
    writeStatus(nowMs(), true);  // the first pages, so that no request ever finds none
    http->publish("/loglevel", "application/json", loggers->levelsJson() + "\n");
    http->onPut("/loglevel", [this](std::string_view query) { return putLogLevel(query); });
    http->start();
    publishDashboard(*http);
    writeTextAtomic(dir / "http_port", std::to_string(http->port()) + "\n");
  }
  nodeLog->info("incarnation {} listening on {}{}{}{}", incarnation, net->endpoint(),
                advertised != net->endpoint() ? " as " + advertised : "", http ? ", http " + http->url() : "",
                life.resumed() ? ", resumed at round " + std::to_string(life.resumeRound()) : "");
}

// PUT /loglevel?level=L[&logger=NAME] (docs/daemon.md#logging), on the HTTP server's thread: the
// loggers' levels are atomics and the Loggers object is otherwise immutable, so no lock is needed.
HttpServer::Answer NodeRuntime::Impl::putLogLevel(std::string_view query) {
  const auto a = logging::applyLevelRequest(*loggers, query);
  if (a.status != 200) return {a.status, a.body};
  http->publish("/loglevel", "application/json", a.body);
  nodeLog->info("log levels set by PUT /loglevel?{}: {}", query, loggers->levelsJson());
  return {a.status, a.body};
}

void NodeRuntime::Impl::setupData() {
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
  if (c.monitor.eval_every && periodicSet())
    evaluation = std::make_unique<PeriodicEvaluation>(*problem->model, *periodicSet(), *background);
}

// --fresh (issue 28: a new run on a directory that holds one, without deleting it). Everything the last run
// left goes to previous/<UTC time>/ inside the directory. What stays: the lock (held by us), `instance` (the
// directory's id, which owns its node.id) and `incarnation` (the life counter peers compare: a new run must
// not look older than the last life they saw), and `log`/`trainer.log` (gossipd cluster's files, open in the
// processes it started).
void NodeRuntime::Impl::moveRunAside() {
  static const std::set<std::string> keep{"lock", "instance", "incarnation", "previous", "log", "trainer.log"};
  std::vector<fs::path> move;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (keep.contains(name) || (name == "checkpoints" && fs::is_empty(e.path()))) continue;
    move.push_back(e.path());
  }
  if (move.empty()) return nodeLog->info("--fresh: '{}' holds no earlier run; starting one", dir.string());
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  fs::path to = dir / "previous" / stamp;
  for (int k = 2; fs::exists(to); ++k) to = dir / "previous" / (std::string(stamp) + "-" + std::to_string(k));
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) throw IoError("--fresh: cannot create '" + to.string() + "': " + ec.message());
  for (const auto& p : move) {
    fs::rename(p, to / p.filename(), ec);
    if (ec) throw IoError("--fresh: cannot move '" + p.string() + "' to '" + to.string() + "': " + ec.message());
  }
  createDataDir(dir);
  nodeLog->info("--fresh: moved the earlier run in '{}' ({} entries) to '{}'; starting a new run", dir.string(),
                move.size(), to.string());
}

void NodeRuntime::Impl::readIncarnation() {
  // The data directory's instance id, made at its first start (membership/membership.h, "Owned ids"): a
  // later life of this directory is a restart of its node.id, another directory with the same id is not.
  const fs::path inst = dir / "instance";
  if (fs::exists(inst)) {
    std::ifstream in(inst);
    std::string hex;
    in >> hex;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
    if (ec != std::errc{} || end != hex.data() + hex.size() || hex.size() != 16 || v == 0)
      throw DataError("'" + inst.string() + "' does not hold an instance id (16 hex digits); move it away to make a new one");
    instance = v;
  } else {
    std::random_device rd;
    while (instance == 0) instance = (std::uint64_t{rd()} << 32) ^ rd();
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(instance));
    writeTextAtomic(inst, std::string(buf) + "\n");
  }
  const fs::path f = dir / "incarnation";
  if (fs::exists(f)) {
    std::ifstream in(f);
    unsigned long long prev = 0;
    if (!(in >> prev)) throw DataError("'" + f.string() + "' does not hold a number");
    incarnation = prev + 1;
  }
  writeTextAtomic(f, std::to_string(incarnation) + "\n");
}

void NodeRuntime::Impl::makeEngine() {
  driver.reset();  // it refers to the engine being replaced
  auto node = trainer ? trainer->makeNode(incarnation) : sim::makeNode(problem->setup, id, incarnation);
  engine::LinkOptions lo;
  lo.topology = topologyParams(c.cluster);
  lo.hello_timeout_ms = c.cluster.link_timeout_ms;
  lo.retransmit_ms = std::max<std::uint64_t>(50, c.cluster.probe_interval_ms);
  engine = std::make_unique<engine::LinkedEngine>(id, incarnation, std::move(node), links->engineTransport(), lo);
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
  life.attach({engine.get(), driver.get(), membership.get(), trainer.get(), incarnation});
}

void NodeRuntime::Impl::loadNewestCheckpoint() {
  if (const auto next = resumeFromNewest(checkpoints, *engine, id, c.algorithm.rounds, dir)) life.resumeAt(*next);
}

namespace {
// An identity text without its protocol.frame_version and protocol.membership_version lines.
std::string withoutWireVersions(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    if (!line.starts_with("protocol.frame_version=") && !line.starts_with("protocol.membership_version="))
      out.append(line).push_back('\n');
    at = end + 1;
  }
  return out;
}
}  // namespace

// The data directory belongs to the cluster that first ran in it (its identity, in the file `cluster`):
// another cluster's node on it would resume checkpoints of another problem, or re-cut every shard in
// silence (issue 28: `gossipd cluster` resumed with another --nodes). Refused with the keys that differ;
// deleting the file is the deliberate way to take the directory over.
void NodeRuntime::Impl::checkClusterFile() {
  const fs::path f = dir / "cluster";
  // The identity, and the node.id that owns the directory (a line the membership's identity does not have).
  const std::string mine = identity + "node.id=" + std::to_string(id) + "\n";
  if (!fs::exists(f)) return writeTextAtomic(f, mine);
  std::ifstream in(f, std::ios::binary);
  std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (held.find("\nnode.id=") == std::string::npos && held.rfind("node.id=", 0) != 0)
    held += "node.id=" + std::to_string(id) + "\n";  // written before the line existed (this session)
  if (held == mine) return;
  // The wire protocol's versions are in the identity because nodes of two versions cannot talk, but nothing
  // the directory holds depends on them: a directory of another gossipd version (an earlier one, on an
  // upgrade) is taken over, not refused (a whole cluster upgraded at once would otherwise have to delete
  // every node's file or start anew).
  if (withoutWireVersions(held) == withoutWireVersions(mine)) {
    nodeLog->info("node.data_dir '{}' was written by another version of the wire protocol ({}); its run goes on here",
                  dir.string(), describeIdentityDifference(mine, held, "now", "before"));
    return writeTextAtomic(f, mine);
  }
  const bool otherNode = describeIdentityDifference(identity, held.substr(0, held.rfind("node.id="))).empty();
  throw RefusedError("node.data_dir '" + dir.string() + "' belongs to " + (otherNode ? "another node" : "another cluster") + ": " +
                     describeIdentityDifference(mine, held, "in this configuration", "in the directory") +
                     ". Run it with that configuration, start anew with --fresh (the run there is moved to previous/) or in "
                     "an empty node.data_dir, or delete '" +
                     f.string() + "' to take the directory over with its checkpoints");
}

void NodeRuntime::Impl::makeMembership() {
  peer::MemberInfo self;
  self.id = id;
  self.incarnation = incarnation;
  self.endpoint = advertised;
  self.instance = instance;
  peer::MembershipOptions mo;
  mo.probe_interval = std::chrono::milliseconds(c.cluster.probe_interval_ms);
  mo.probe_timeout = std::chrono::milliseconds(c.cluster.probe_timeout_ms);
  mo.indirect_probes = c.cluster.indirect_probes;
  mo.suspicion_mult = c.cluster.suspicion_mult;
  mo.recontact_interval = std::chrono::milliseconds(c.cluster.recontact_interval_ms);
  identity = clusterIdentity(c, engine->node().algorithm().x().size(), trainer ? trainer->layoutIdentity() : "");
  if (!membership) checkClusterFile();  // once per process: the first life's identity is the directory's
  mo.identity = identity;
  const auto seeds = joinSeeds(rejoinVia, c.cluster.seeds, {net->endpoint(), advertised}, extraSeeds);
  auto m = std::make_unique<peer::Membership>(
      self, seeds, mo, [this](PeerId to, const std::string& ep, Bytes payload) { links->sendMembership(to, ep, std::move(payload)); },
      deriveSeed({c.cluster.seed, id, incarnation, 0x5713ull}));
  if (membership) return membership->restart(std::move(m));  // a rejoin: same runner, new life
  MembershipRunner::Hooks hooks;
  hooks.frame = [this](const engine::RawFrame& f) { links->countReceived(f, nowMs()); };
  hooks.changed = [this](const auto& events, const auto& table) { links->followMembers(events, table); };
  membership = std::make_unique<MembershipRunner>(std::move(m), *net, std::move(hooks), mo.probe_timeout / 2, env.now);
  statusGossip->attach(*membership);
  life.attach({engine.get(), driver.get(), membership.get(), trainer.get(), incarnation});
}

logging::Options loggerOptions(const NodeConfig& node) {
  return {.level = node.log_level, .levels = node.log_levels, .format = logging::parseFormat(node.log_format),
          .node = node.id};
}

NodeRuntime::NodeRuntime(Config config, std::shared_ptr<logging::Loggers> loggers, StartMode start, NodeEnvironment env) {
  if (!loggers) loggers = std::make_shared<logging::Loggers>(loggerOptions(config.node));
  impl_ = std::make_unique<Impl>(std::move(config), std::move(loggers), start, std::move(env));
}
const engine::LinkedEngine* NodeRuntime::engine() const { return impl_->engine.get(); }
std::uint64_t NodeRuntime::round() const { return impl_->life.round(); }
NodeRuntime::~NodeRuntime() = default;

}  // namespace gossip::daemon
