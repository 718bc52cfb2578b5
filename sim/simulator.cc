#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "peer/wire_header.h"
#include "training/reference_solver.h"

namespace gossip::sim {
namespace {

using training::Vec;
using Clock = std::chrono::steady_clock;

// A data set made of the first `count` rows of `src` (for bounded-cost evaluation).
training::Dataset headRows(const training::Dataset& src, std::size_t count) {
  training::Dataset d;
  count = std::min(count, src.samples());
  d.X = src.X.topRows(static_cast<Eigen::Index>(count));
  d.y.assign(src.y.begin(), src.y.begin() + static_cast<std::ptrdiff_t>(count));
  d.classes = src.classes;
  return d;
}

constexpr std::size_t kNodeAccuracyNodes = 64;     // node accuracy is sampled on this many nodes at most
constexpr std::size_t kNodeAccuracySamples = 1000;  // ... on this many test samples

}  // namespace

Simulator::Simulator(SimSetup setup) : s_(std::move(setup)) {
  if (!s_.model || !s_.train || !s_.compressor) throw Error("simulator: model, data and compressor are required");
  if (s_.threads == 0) throw ConfigError("sim.threads must be >= 1");
  timeVarying_ = s_.topology.kind == topology::Kind::OnePeerExponential;
  // Probe the algorithm family once, on a throwaway instance.
  const bool stateless =
      algo::makeAlgorithm(s_.algorithm, *s_.compressor, 0, Vec::Zero(1))->stateless();
  if (!stateless && s_.drop > 0.0)
    throw ConfigError("faults.drop > 0 needs a stateless algorithm (dpsgd, deepsqueeze): " + s_.algorithm.name +
                      " must apply every message exactly once");
  if (!stateless && timeVarying_)
    throw ConfigError("cluster.topology: the one-peer exponential graph changes every round; " + s_.algorithm.name +
                      " keeps per-edge state and needs a static graph");
  PeerId maxId = s_.initial_nodes ? s_.initial_nodes - 1 : 0;
  for (const auto& j : s_.joins) maxId = std::max(maxId, j.node);
  if (s_.partition.size() <= maxId)
    throw ConfigError("simulator: data partition has " + std::to_string(s_.partition.size()) +
                      " shards but node ids go up to " + std::to_string(maxId));
  for (PeerId i = 0; i < s_.initial_nodes; ++i) addNode(i);
  rewire();
}

Simulator::~Simulator() = default;

void Simulator::addNode(PeerId id) {
  if (nodes_.count(id)) throw ConfigError("faults.join: node " + std::to_string(id) + " is already alive");
  Vec x0;
  Rng initRng(deriveSeed({s_.seed, 0x1417ull}));  // same start on every node: x0 is a shared seed's draw
  s_.model->init(x0, initRng);
  algo::AlgorithmParams p = s_.algorithm;
  p.l1 = s_.model->l1();
  p.seed = s_.seed;
  auto algorithm = algo::makeAlgorithm(p, *s_.compressor, id, x0);
  auto est = training::makeEstimator(s_.estimator, *s_.model, *s_.train, s_.partition[id],
                                     deriveSeed({s_.seed, id, 0xE57ull}));
  algo::NodeSchedule sched;
  sched.lr = [lr = s_.lr](Round t) { return lr.value(t); };
  sched.localSteps = [ls = s_.local](Round t) { return static_cast<unsigned>(std::max(1, ls.value(t))); };
  sched.l1 = s_.model->l1();
  nodes_[id] = std::make_unique<algo::Node>(id, std::move(algorithm), std::move(est), std::move(sched));
}

void Simulator::rewire() {
  std::vector<PeerId> alive;
  for (const auto& [id, n] : nodes_) alive.push_back(id);
  rows_.clear();
  if (alive.empty()) return;
  topology::Graph g = topology::buildGraph(alive, s_.topology);
  const bool stateless = nodes_.begin()->second->algorithm().stateless();
  // Only D-PSGD-type stateless methods with the exponential graph's own uniform weights may mix over the
  // directed graph; replica methods need a symmetric W, and Metropolis/max-degree are defined on (W+W^T)/2's
  // undirected support (ALGORITHMS.md §2.5).
  if (g.directed && (!stateless || s_.weights != topology::WeightRule::Uniform)) g = topology::symmetrize(g);
  for (PeerId id : alive) rows_[id] = topology::mixingRow(g, id, s_.weights);
  if (timeVarying_) return;  // stateless only: no edge state to maintain

  std::vector<std::pair<PeerId, PeerId>> want;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (auto j : g.out[i])
      want.emplace_back(std::min(g.nodes[i], g.nodes[j]), std::max(g.nodes[i], g.nodes[j]));
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  // Both ends of a changed edge act in the same step, as the daemon's edge handshake guarantees.
  for (const auto& e : edges_)
    if (!std::binary_search(want.begin(), want.end(), e)) {
      if (auto a = nodes_.find(e.first); a != nodes_.end()) a->second->algorithm().dropEdge(algo::EdgeKey{e.second, 0});
      if (auto b = nodes_.find(e.second); b != nodes_.end()) b->second->algorithm().dropEdge(algo::EdgeKey{e.first, 0});
    }
  for (const auto& e : want)
    if (!std::binary_search(edges_.begin(), edges_.end(), e)) {
      auto& a = nodes_.at(e.first)->algorithm();
      auto& b = nodes_.at(e.second)->algorithm();
      const auto pa = a.publicState(), pb = b.publicState();
      a.addEdge(algo::EdgeKey{e.second, 0}, pb);
      b.addEdge(algo::EdgeKey{e.first, 0}, pa);
    }
  edges_ = std::move(want);
}

void Simulator::exchange(Round t) {
  bool changed = false;
  std::vector<PeerId> joined;
  for (const auto& c : s_.crashes)
    if (c.round == t && nodes_.erase(c.node)) changed = true;
  for (const auto& j : s_.joins)
    if (j.round == t) {
      addNode(j.node);
      joined.push_back(j.node);
      changed = true;
    }
  if (changed) rewire();
  // A joining node starts from a neighbour's model (the state transfer of DESIGN.md §5).
  for (PeerId id : joined) {
    const auto& row = rows_.at(id);
    if (!row.neighbors.empty()) nodes_.at(id)->algorithm().x() = nodes_.at(row.neighbors.front().first)->algorithm().x();
  }
  if (timeVarying_) {
    s_.topology.round = t;
    rewire();
  }

  for (const auto& c : s_.crashes)
    if (c.round == t) outbox_.erase(c.node);
  for (const auto& [id, node] : nodes_) outbox_[id];  // create buffers before the parallel phase
  forEachNode([&](algo::Node& node) { node.beginRound(t, outbox_.at(node.id())); });
  for (const auto& [id, node] : nodes_)
    for (const auto& [j, w] : rows_.at(id).neighbors) bytes_ += outbox_.at(j).size() + peer::kWireHeaderBytes;
  forEachNode([&](algo::Node& node) {
    std::vector<algo::Incoming> msgs;
    std::uint64_t dropped = 0;
    const auto& row = rows_.at(node.id());
    for (const auto& [j, w] : row.neighbors) {
      // The loss of message j -> i in round t is a pure function of (seed, t, i, j): thread-count independent.
      if (s_.drop > 0.0 && Rng(deriveSeed({s_.seed, 0xD80Bull, t, node.id(), j})).uniform() < s_.drop) {
        ++dropped;
        continue;
      }
      msgs.push_back({j, 0, outbox_.at(j).view()});
    }
    node.endRound(t, msgs, row);
    if (dropped) {
      std::lock_guard lock(dropMutex_);
      dropped_ += dropped;
    }
  });
}

void Simulator::forEachNode(const std::function<void(algo::Node&)>& fn) {
  std::vector<algo::Node*> all;
  all.reserve(nodes_.size());
  for (auto& [id, node] : nodes_) all.push_back(node.get());
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

EvalRecord Simulator::evaluate(Round t) {
  EvalRecord r;
  r.round = t;
  r.alive = static_cast<std::uint32_t>(nodes_.size());
  r.bytes_sent = bytes_;
  r.messages_dropped = dropped_;
  if (nodes_.empty()) return r;
  const double n = static_cast<double>(nodes_.size());
  Vec xbar = Vec::Zero(nodes_.begin()->second->algorithm().x().size());
  for (auto& [id, node] : nodes_) xbar += node->algorithm().x();
  xbar /= n;
  Vec grad;
  const double l1 = s_.model->l1();
  for (auto& [id, node] : nodes_) {
    const Vec& x = node->algorithm().x();
    r.loss += s_.model->lossAndGrad(x, *s_.train, s_.partition[id], grad) + l1 * x.lpNorm<1>();
    r.consensus_distance += (x - xbar).squaredNorm();
  }
  r.loss /= n;
  r.consensus_distance /= n;

  if (!evalSet_) {
    const training::Dataset& src = s_.test ? *s_.test : *s_.train;
    evalSet_ = std::make_unique<training::Dataset>(
        headRows(src, s_.eval_test_max ? s_.eval_test_max : src.samples()));
    nodeEvalSet_ = std::make_unique<training::Dataset>(headRows(*evalSet_, kNodeAccuracySamples));
  }
  if (s_.train->classes > 0) {
    r.accuracy = s_.model->accuracy(xbar, *evalSet_);
    const std::size_t stride = std::max<std::size_t>(1, nodes_.size() / kNodeAccuracyNodes);
    r.node_accuracy_min = 1.0;
    std::size_t k = 0;
    for (auto& [id, node] : nodes_) {
      if (k++ % stride) continue;
      const double a = s_.model->accuracy(node->algorithm().x(), *nodeEvalSet_);
      r.node_accuracy_min = std::min(r.node_accuracy_min, a);
      r.node_accuracy_max = std::max(r.node_accuracy_max, a);
    }
  }
  if (const Vec* xs = optimum()) {
    std::vector<training::Shard> shards;
    for (const auto& [id, node] : nodes_) shards.push_back({s_.train, s_.partition[id]});
    r.suboptimality = training::compositeObjective(*s_.model, shards, xbar) -
                      training::compositeObjective(*s_.model, shards, *xs);
    double worst = 0.0;
    for (auto& [id, node] : nodes_) worst = std::max(worst, (node->algorithm().x() - *xs).norm() / xs->norm());
    r.rel_error = worst;
  }
  return r;
}

std::vector<EvalRecord> Simulator::run(const std::function<void(const EvalRecord&)>& progress) {
  std::vector<EvalRecord> out;
  const auto start = Clock::now();
  for (Round t = 0; t < s_.rounds; ++t) {
    exchange(t);
    const bool last = t + 1 == s_.rounds;
    if (last || (s_.eval_every && (t + 1) % s_.eval_every == 0)) {
      EvalRecord r = evaluate(t + 1);
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (progress) progress(r);
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace gossip::sim
