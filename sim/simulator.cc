#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/serial.h"
#include "engine/checkpoint.h"
#include "engine/view.h"
#include "training/reference_solver.h"

namespace gossip::sim {
namespace {

using training::Vec;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kNodeAccuracyNodes = 64;     // node accuracy is sampled on this many nodes at most
constexpr std::size_t kNodeAccuracySamples = 1000;  // ... on this many test samples
constexpr std::size_t kFinalNodeAccuracyNodes = 256;  // the last record: this many nodes, whole eval set

}  // namespace

std::unique_ptr<algo::Node> makeNode(const SimSetup& s, PeerId id, Incarnation inc) {
  Vec x0;
  Rng initRng(deriveSeed({s.seed, 0x1417ull}));  // same start on every node: x0 is a shared seed's draw
  s.model->init(x0, initRng);
  algo::AlgorithmParams p = s.algorithm;
  p.l1 = s.model->l1();
  p.seed = s.seed;
  p.incarnation = inc;
  auto algorithm = algo::makeAlgorithm(p, *s.compressor, id, x0);
  // A restarted node never replays its old sampling stream (incarnation 0 keeps the historical seed).
  const std::uint64_t estSeed =
      inc == 0 ? deriveSeed({s.seed, id, 0xE57ull}) : deriveSeed({s.seed, id, 0xE57ull, 0x1AC0ull, inc});
  training::EstimatorSpec spec = s.estimator;
  spec.reference = s.distill_reference;
  auto est = training::makeEstimator(spec, *s.model, *s.train, s.partition[id], estSeed);
  algo::NodeSchedule sched;
  sched.lr = [lr = s.lr](Round t) { return lr.value(t); };
  sched.localSteps = [ls = s.local](Round t) { return static_cast<unsigned>(std::max(1, ls.value(t))); };
  sched.l1 = s.model->l1();
  if (s.final_consensus_rounds > 0) sched.consensus_from = s.rounds - s.final_consensus_rounds;
  sched.consensus_codec = s.final_consensus_codec;
  return std::make_unique<algo::Node>(id, std::move(algorithm), std::move(est), std::move(sched));
}

struct Simulator::Sim {
  engine::InprocTransport transport;
  std::unique_ptr<engine::SyncEngine> engine;
};

Simulator::Simulator(SimSetup setup) : s_(std::move(setup)) {
  if (!s_.model || !s_.train || !s_.compressor) throw Error("simulator: model, data and compressor are required");
  if (s_.threads == 0) throw ConfigError("sim.threads must be >= 1");
  timeVarying_ = s_.topology.kind == topology::Kind::OnePeerExponential;
  // Probe the algorithm family once, on a throwaway instance.
  stateless_ = algo::makeAlgorithm(s_.algorithm, *s_.compressor, 0, Vec::Zero(1))->stateless();
  if (!stateless_ && s_.drop > 0.0)
    throw ConfigError("faults.drop > 0 needs a stateless algorithm (dpsgd, deepsqueeze): " + s_.algorithm.name +
                      " must apply every message exactly once");
  if (!stateless_ && timeVarying_)
    throw ConfigError("cluster.topology: the one-peer exponential graph changes every round; " + s_.algorithm.name +
                      " keeps per-edge state and needs a static graph");
  PeerId maxId = s_.initial_nodes ? s_.initial_nodes - 1 : 0;
  for (const auto& j : s_.joins) maxId = std::max(maxId, j.node);
  if (s_.partition.size() <= maxId)
    throw ConfigError("simulator: data partition has " + std::to_string(s_.partition.size()) +
                      " shards but node ids go up to " + std::to_string(maxId));
  // Build the starting cluster here, so that a bad topology or checkpoint fails before the run starts.
  if (s_.resume_dir.empty()) {
    for (PeerId i = 0; i < s_.initial_nodes; ++i) addNode(i, 0);
    installView(0);
  } else {
    first_ = resume();
  }
}

Simulator::~Simulator() = default;

void Simulator::addNode(PeerId id, Incarnation inc) {
  if (nodes_.count(id)) throw ConfigError("faults.join: node " + std::to_string(id) + " is already alive");
  incarnations_[id] = inc;
  auto node = makeNode(s_, id, inc);
  net_.attach(id);
  auto sim = std::unique_ptr<Sim>(new Sim{engine::InprocTransport(net_, id), nullptr});
  sim->engine = std::make_unique<engine::SyncEngine>(id, inc, std::move(node), sim->transport);
  nodes_[id] = std::move(sim);
}

void Simulator::removeNode(PeerId id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  const auto& st = it->second->engine->stats();
  goneBytes_ += st.model_bytes_sent;
  goneControl_ += st.control_bytes_sent;
  goneRejected_ += st.rejectedTotal();
  nodes_.erase(it);
  net_.detach(id);  // whatever was in flight to it is lost
}

// Every engine installs the same new view (the membership service of the simulator is perfect), then
// control traffic (edge handshakes) runs until the network is quiet.
void Simulator::installView(Round t) {
  engine::View view;
  for (const auto& [id, n] : nodes_) view.push_back({id, incarnations_.at(id)});
  if (view.empty()) return;
  auto vg = engine::buildViewGraph(std::move(view), s_.topology, s_.weights, stateless_, ++epoch_);
  for (auto& [id, n] : nodes_) n->engine->setView(vg, t);
  pumpControl(t);
}

void Simulator::pumpControl(Round t) {
  for (int pass = 0; net_.inFlight() > 0; ++pass) {
    GOSSIP_CHECK(pass < 16, "control traffic did not settle");
    for (auto& [id, n] : nodes_) n->engine->drain(t);
  }
  for (auto& [id, n] : nodes_)
    GOSSIP_CHECK(n->engine->edgesReady(), "node ", id, " has edges that did not open");
}

void Simulator::round(Round t) {
  bool changed = false;
  std::vector<PeerId> joined;
  for (const auto& c : s_.crashes)
    if (c.round == t && nodes_.count(c.node)) {
      removeNode(c.node);
      changed = true;
    }
  for (const auto& j : s_.joins)
    if (j.round == t) {
      // A crashed id that comes back is a restart: a new incarnation, so all its edges are new.
      auto prev = incarnations_.find(j.node);
      addNode(j.node, prev == incarnations_.end() ? 0 : prev->second + 1);
      joined.push_back(j.node);
      changed = true;
    }
  if (timeVarying_) {
    s_.topology.round = t;
    changed = true;
  }
  if (changed) installView(t);
  // A joining node starts from a neighbour's model: state transfer from its lowest-id neighbour.
  for (PeerId id : joined) {
    const auto& row = nodes_.at(id)->engine->row();
    if (!row.neighbors.empty()) nodes_.at(id)->engine->requestState(row.neighbors.front().first, t);
  }
  if (!joined.empty()) pumpControl(t);

  if (s_.drop > 0.0)
    // The loss of message j -> i in round t is a pure function of (seed, t, i, j): thread-count independent.
    net_.setDropRule([seed = s_.seed, drop = s_.drop, t](PeerId from, PeerId to) {
      return Rng(deriveSeed({seed, 0xD80Bull, t, to, from})).uniform() < drop;
    });
  forEachEngine([&](engine::NodeEngine& e) { e.beginRound(t); });
  forEachEngine([&](engine::NodeEngine& e) { e.endRound(t); });
}

void Simulator::forEachEngine(const std::function<void(engine::NodeEngine&)>& fn) {
  std::vector<engine::NodeEngine*> all;
  all.reserve(nodes_.size());
  for (auto& [id, n] : nodes_) all.push_back(n->engine.get());
  const std::size_t workers = std::min<std::size_t>(s_.threads, all.size());
  if (workers <= 1) {
    for (auto* n : all) fn(*n);
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w)
    pool.emplace_back([&, w] {
      try {
        for (std::size_t i = w; i < all.size(); i += workers) fn(*all[i]);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  try {
    for (std::size_t i = 0; i < all.size(); i += workers) fn(*all[i]);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::optional<training::Vec> Simulator::dualSum() const {
  std::optional<Vec> sum;
  for (const auto& [id, n] : nodes_) {
    const Vec* d = n->engine->node().algorithm().dual();
    if (!d) return std::nullopt;
    sum = sum ? Vec(*sum + *d) : *d;
  }
  return sum;
}

std::map<PeerId, training::Vec> Simulator::models() const {
  std::map<PeerId, Vec> out;
  for (const auto& [id, n] : nodes_) out[id] = n->engine->node().algorithm().x();
  return out;
}

const training::Vec* Simulator::optimum() {
  if (!s_.reference) return nullptr;
  std::vector<PeerId> alive;
  for (const auto& [id, n] : nodes_) alive.push_back(id);
  auto it = optima_.find(alive);
  if (it == optima_.end()) {
    std::vector<training::Shard> shards;
    for (PeerId id : alive) shards.push_back({s_.train, s_.partition[id]});
    it = optima_.emplace(alive, training::solveReference(*s_.model, shards).x).first;
  }
  return &it->second;
}

EvalRecord Simulator::evaluate(Round t, bool last) {
  EvalRecord r;
  r.round = t;
  r.alive = static_cast<std::uint32_t>(nodes_.size());
  r.bytes_sent = goneBytes_;
  r.control_bytes_sent = goneControl_;
  r.messages_rejected = goneRejected_;
  for (const auto& [id, n] : nodes_) {
    const auto& st = n->engine->stats();
    r.bytes_sent += st.model_bytes_sent;
    r.control_bytes_sent += st.control_bytes_sent;
    r.messages_rejected += st.rejectedTotal();
  }
  r.messages_dropped = droppedBase_ + net_.dropped();
  if (nodes_.empty()) return r;
  const double n = static_cast<double>(nodes_.size());
  Vec xbar = Vec::Zero(nodes_.begin()->second->engine->node().algorithm().x().size());
  for (auto& [id, node] : nodes_) xbar += node->engine->node().algorithm().x();
  xbar /= n;
  Vec grad;
  const double l1 = s_.model->l1();
  for (auto& [id, node] : nodes_) {
    const Vec& x = node->engine->node().algorithm().x();
    r.loss += s_.model->lossAndGrad(x, *s_.train, s_.partition[id], grad) + l1 * x.lpNorm<1>();
    r.consensus_distance += training::squaredNorm64(x - xbar);
    const double gamma = node->engine->node().algorithm().consensusStep();
    if (std::isfinite(gamma)) {
      r.gamma_min = std::isnan(r.gamma_min) ? gamma : std::min(r.gamma_min, gamma);
      r.gamma_max = std::isnan(r.gamma_max) ? gamma : std::max(r.gamma_max, gamma);
    }
  }
  r.loss /= n;
  r.consensus_distance /= n;
  r.relative_consensus = r.consensus_distance / training::squaredNorm64(xbar);

  if (!evalSet_) {
    const training::Dataset& src = s_.test ? *s_.test : *s_.train;
    evalSet_ = std::make_unique<training::Dataset>(
        training::headOf(src, s_.eval_test_max ? s_.eval_test_max : src.samples()));
    nodeEvalSet_ = std::make_unique<training::Dataset>(training::headOf(*evalSet_, kNodeAccuracySamples));
  }
  if (s_.train->classes > 0) {
    r.accuracy = s_.model->accuracy(xbar, *evalSet_);
    const std::size_t most = last ? kFinalNodeAccuracyNodes : kNodeAccuracyNodes;
    const training::Dataset& set = last ? *evalSet_ : *nodeEvalSet_;
    const std::size_t stride = (nodes_.size() + most - 1) / most;
    r.node_accuracy_min = 1.0;
    std::size_t k = 0;
    double sum = 0.0;
    for (auto& [id, node] : nodes_) {
      if (k++ % stride) continue;
      const double a = s_.model->accuracy(node->engine->node().algorithm().x(), set);
      r.node_accuracy_min = std::min(r.node_accuracy_min, a);
      r.node_accuracy_max = std::max(r.node_accuracy_max, a);
      sum += a;
      ++r.node_eval_nodes;
    }
    r.node_accuracy_mean = sum / r.node_eval_nodes;
    r.node_eval_samples = set.samples();
  }
  if (const Vec* xs = optimum()) {
    std::vector<training::Shard> shards;
    for (const auto& [id, node] : nodes_) shards.push_back({s_.train, s_.partition[id]});
    r.suboptimality = training::compositeObjective(*s_.model, shards, xbar) -
                      training::compositeObjective(*s_.model, shards, *xs);
    double worst = 0.0;
    for (auto& [id, node] : nodes_) worst = std::max(worst, training::norm64(node->engine->node().algorithm().x() - *xs) / training::norm64(*xs));
    r.rel_error = worst;
  }
  return r;
}

namespace {
constexpr std::uint32_t kSimTag = serial::fourcc("SIMS");
std::filesystem::path nodeFile(const std::string& dir, PeerId id) {
  return std::filesystem::path(dir) / ("node-" + std::to_string(id) + ".ckpt");
}
}  // namespace

// The simulator's own state beside one checkpoint per node: which ids are alive with which incarnation,
// every incarnation ever used, the view epoch and the cumulative counters.
void Simulator::save(Round nextRound) const {
  std::filesystem::create_directories(s_.save_dir);
  Bytes b;
  ByteWriter w(b);
  serial::putTag(w, kSimTag);
  w.put<std::uint64_t>(nextRound);
  w.put<std::uint64_t>(epoch_);
  w.put<std::uint64_t>(incarnations_.size());
  for (const auto& [id, inc] : incarnations_) {
    w.put<std::uint32_t>(id);
    w.put<std::uint64_t>(inc);
    w.put<std::uint8_t>(nodes_.count(id) ? 1 : 0);
  }
  std::uint64_t bytes = goneBytes_, control = goneControl_, rejected = goneRejected_;
  for (const auto& [id, n] : nodes_) {
    engine::writeCheckpoint(nodeFile(s_.save_dir, id), n->engine->save(nextRound));
    bytes += n->engine->stats().model_bytes_sent;
    control += n->engine->stats().control_bytes_sent;
    rejected += n->engine->stats().rejectedTotal();
  }
  for (std::uint64_t v : {bytes, control, rejected, droppedBase_ + net_.dropped()}) w.put<std::uint64_t>(v);
  engine::writeCheckpoint(std::filesystem::path(s_.save_dir) / "sim.ckpt", b);
}

Round Simulator::resume() {
  try {
    const Bytes b = engine::readCheckpoint(std::filesystem::path(s_.resume_dir) / "sim.ckpt");
    ByteReader r(b, "simulator state");
    serial::expectTag(r, kSimTag, "simulator state");
    const Round next = r.get<std::uint64_t>();
    const std::uint64_t epoch = r.get<std::uint64_t>();
    const std::size_t count = serial::getCount(r, 13);
    std::vector<PeerId> alive;
    for (std::size_t k = 0; k < count; ++k) {
      const auto id = r.get<std::uint32_t>();
      const auto inc = r.get<std::uint64_t>();
      if (id >= s_.partition.size()) throw DecodeError("node id " + std::to_string(id) + " has no data shard");
      incarnations_[id] = inc;
      if (r.get<std::uint8_t>()) alive.push_back(id);
    }
    goneBytes_ = r.get<std::uint64_t>();
    goneControl_ = r.get<std::uint64_t>();
    goneRejected_ = r.get<std::uint64_t>();
    droppedBase_ = r.get<std::uint64_t>();
    r.expectEnd();
    for (PeerId id : alive) {
      addNode(id, incarnations_.at(id));
      auto& e = *nodes_.at(id)->engine;
      if (e.load(engine::readCheckpoint(nodeFile(s_.resume_dir, id))) != next)
        throw DecodeError("node " + std::to_string(id) + " was saved after another round");
    }
    // The saved engines count their own bytes again from here; their earlier totals are in gone*.
    epoch_ = epoch - 1;
    installView(next);
    return next;
  } catch (const DecodeError& e) {
    throw DataError("resume from " + s_.resume_dir + ": " + e.what());
  } catch (const IoError& e) {  // a missing or unreadable checkpoint is the user's input, not a broken link
    throw DataError(std::string("resume: ") + e.what());
  }
}

std::vector<EvalRecord> Simulator::run(const std::function<void(const EvalRecord&)>& progress) {
  std::vector<EvalRecord> out;
  const auto start = Clock::now();
  for (Round t = first_; t < s_.rounds; ++t) {
    round(t);
    if (s_.save_after && t + 1 == s_.save_after) save(t + 1);
    const bool last = t + 1 == s_.rounds;
    if (last || (s_.eval_every && (t + 1) % s_.eval_every == 0)) {
      EvalRecord r = evaluate(t + 1, last);
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (progress) progress(r);
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace gossip::sim
