// codistill (algorithms/codistill.h): each round against the rule computed here from the state before it,
// the copies as exact replicas of the neighbours' public models under a lossy compressor, refreshes only in
// their rounds with empty messages between, a restarted neighbour's copy, bad messages refused with the state
// unchanged, the checkpoint, and training on real models where the term pulls the nodes' predictions together.
#include <doctest/doctest.h>

#include <map>

#include "algorithms/algorithm.h"
#include "algorithms/codistill.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "codistill_ring.h"
#include "gossip_only.h"
#include "harness.h"
#include "training/estimators.h"
#include "training/feedforward.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

constexpr Eigen::Index kDim = 30;
constexpr double kLr = 0.1;
constexpr double kWeight = 0.8;

Vec targetOf(PeerId id) { return gossipStart(id + 40, kDim); }

// A quadratic stand-in for the distillation term: g = (x - target) + weight (x - mean of the teachers), so
// the rule can be checked exactly. It records how many teachers it was given.
class PullAndDistill final : public training::GradientEstimator {
 public:
  explicit PullAndDistill(Vec target) : target_(std::move(target)) {}
  double estimate(const Vec& x, Vec& g) override {
    g = x - target_;
    lastTeachers = 0;
    return 0.5 * g.squaredNorm();
  }
  double estimateDistilled(const Vec& x, std::span<const Vec* const> teachers, double weight, Vec& g) override {
    Vec mean = Vec::Zero(x.size());
    for (const Vec* t : teachers) mean += *t / static_cast<double>(teachers.size());
    g = (x - target_) + weight * (x - mean);
    lastTeachers = teachers.size();
    return 0.5 * g.squaredNorm();
  }
  std::size_t lastTeachers = 0;

 private:
  Vec target_;
};

algo::AlgorithmParams params(std::uint64_t period = 1) {
  return {.name = "codistill", .distill_weight = kWeight, .distill_period = period};
}

MiniNet::Factory nodes(const algo::AlgorithmParams& p, const compress::Compressor& c) {
  return [&p, &c](PeerId id) {
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return kLr; };
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(p, c, id, gossipStart(id, kDim)),
                                        std::make_unique<PullAndDistill>(targetOf(id)), std::move(sched));
  };
}

const algo::Codistill& codistill(const algo::Node* n) { return dynamic_cast<const algo::Codistill&>(n->algorithm()); }

// Every node's copy of every neighbour equals that neighbour's public model, bit for bit.
void checkReplicas(MiniNet& net) {
  auto all = net.nodes();
  for (auto& [id, n] : all)
    for (const auto& [j, w] : net.row(id).neighbors) {
      CAPTURE(id);
      CAPTURE(j);
      CHECK(codistill(n).copyOf(j).cwiseEqual(codistill(all.at(j)).publicCopy()).all());
    }
}

}  // namespace

TEST_CASE("codistill: each round is x_i - lr (grad f_i + weight grad of the term toward the copies of its neighbours)") {
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.2});
  const auto p = params();
  MiniNet net(6, nodes(p, *c));
  for (Round t = 0; t < 8; ++t) {
    std::map<PeerId, Vec> want;
    for (auto& [id, n] : net.nodes()) {
      Vec mean = Vec::Zero(kDim);
      const auto& row = net.row(id);
      for (const auto& [j, w] : row.neighbors) mean += codistill(n).copyOf(j) / static_cast<double>(row.neighbors.size());
      const Vec& x = n->algorithm().x();
      // Round 0 has no teachers yet: they are the copies of the last mixed round's neighbours.
      want[id] = x - kLr * ((x - targetOf(id)) + (t == 0 ? 0.0 : kWeight) * (x - mean));
    }
    net.round(t);
    for (auto& [id, n] : net.nodes()) {
      CAPTURE(id);
      CHECK(dynamic_cast<PullAndDistill&>(n->estimator()).lastTeachers == (t == 0 ? 0u : 2u));  // a ring: two copies
      CHECK((n->algorithm().x() - want.at(id)).norm() <= 1e-14 * want.at(id).norm());
    }
    checkReplicas(net);
  }
  // The copies track the models (compressed differences with the public copy as memory).
  for (Round t = 8; t < 200; ++t) net.round(t);
  for (auto& [id, n] : net.nodes())
    CHECK((codistill(n).publicCopy() - n->algorithm().x()).norm() < 1e-3 * n->algorithm().x().norm());
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("codistill: copies refresh only in rounds t % distill_period == 0 and the messages between are empty") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto p = params(3);
  auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
  compress::Encoded out;
  for (Round t = 0; t < 7; ++t) {
    a->prepare(t, Vec::Ones(kDim), kLr, out);
    CHECK(out.bytes.empty() == (t % 3 != 0));
    a->apply(t, {}, topology::MixingRow{.self = 1.0, .neighbors = {}});
  }
  MiniNet net(5, nodes(p, *c));
  std::map<PeerId, Vec> before;
  for (Round t = 0; t < 9; ++t) {
    for (auto& [id, n] : net.nodes()) before[id] = codistill(n).copyOf(net.row(id).neighbors.front().first);
    net.round(t);
    for (auto& [id, n] : net.nodes()) {
      CAPTURE(t);
      const Vec& now = codistill(n).copyOf(net.row(id).neighbors.front().first);
      CHECK(now.cwiseEqual(before.at(id)).all() == (t % 3 != 0));
    }
    checkReplicas(net);
  }
}

TEST_CASE("codistill: a restarted neighbour's copy starts from its new public model - and the rounds go on") {
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.2});
  const auto p = params(2);
  MiniNet net(5, nodes(p, *c));
  for (Round t = 0; t < 10; ++t) net.round(t);
  algo::AlgorithmParams fresh = p;
  fresh.incarnation = 1;
  algo::NodeSchedule sched;
  sched.lr = [](Round) { return kLr; };
  net.restart(2, 1, std::make_unique<algo::Node>(2, algo::makeAlgorithm(fresh, *c, 2, gossipStart(7, kDim)),
                                                 std::make_unique<PullAndDistill>(targetOf(2)), std::move(sched)));
  checkReplicas(net);
  CHECK(codistill(net.nodes().at(1)).copyOf(2).cwiseEqual(gossipStart(7, kDim)).all());
  for (Round t = 10; t < 20; ++t) {
    net.round(t);
    checkReplicas(net);
  }
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("codistill: a refresh outside its rounds - a missing message or a corrupt payload is refused - state unchanged") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto p = params(2);
  auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
  auto b = algo::makeAlgorithm(p, *c, 1, gossipStart(1, kDim));
  a->addEdge({1, 0}, b->publicState());
  b->addEdge({0, 0}, a->publicState());
  const topology::MixingRow row{.self = 0.5, .neighbors = {{1, 0.5}}};
  compress::Encoded ma, mb;
  a->prepare(1, Vec::Ones(kDim), kLr, ma);  // round 1: no refresh
  b->prepare(0, Vec::Ones(kDim), kLr, mb);  // a refresh, sent in the wrong round
  const Vec x = a->x();
  Bytes saved;
  {
    ByteWriter w(saved);
    a->save(w);
  }
  const auto unchanged = [&] {
    Bytes now;
    ByteWriter w(now);
    a->save(w);
    CHECK(now == saved);
  };
  const algo::Incoming early{1, 0, mb.view()};
  CHECK_THROWS_AS(a->apply(1, std::span<const algo::Incoming>(&early, 1), row), algo::RejectedMessage);
  unchanged();
  CHECK_THROWS_AS(a->apply(1, {}, row), ProtocolError);
  unchanged();
  const algo::Incoming wrongLife{1, 3, {}};
  CHECK_THROWS_AS(a->apply(1, std::span<const algo::Incoming>(&wrongLife, 1), row), algo::RejectedMessage);
  unchanged();
  const algo::Incoming cut{1, 0, mb.view().first(5)};
  CHECK_THROWS_AS(a->apply(2, std::span<const algo::Incoming>(&cut, 1), row), algo::RejectedMessage);
  unchanged();
  const algo::Incoming empty{1, 0, {}};
  a->apply(1, std::span<const algo::Incoming>(&empty, 1), row);
  CHECK(a->x().cwiseEqual(x).all());
}

TEST_CASE("codistill: checkpoint round trip - and a truncated or foreign state is refused") {
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.2});
  const auto p = params();
  MiniNet net(4, nodes(p, *c));
  for (Round t = 0; t < 5; ++t) net.round(t);
  const algo::Algorithm& a = net.nodes().at(1)->algorithm();
  Bytes bytes;
  ByteWriter w(bytes);
  a.save(w);
  auto b = algo::makeAlgorithm(p, *c, 1, Vec::Zero(kDim));
  ByteReader r(bytes);
  b->load(r);
  CHECK(b->x().cwiseEqual(a.x()).all());
  CHECK(b->edges() == a.edges());
  CHECK(b->teachers().size() == 2);
  for (const auto& e : a.edges())
    CHECK(dynamic_cast<const algo::Codistill&>(*b).copyOf(e.id).cwiseEqual(codistill(net.nodes().at(1)).copyOf(e.id)).all());
  auto fresh = algo::makeAlgorithm(p, *c, 1, Vec::Zero(kDim));
  Bytes cut(bytes.begin(), bytes.end() - 9);
  ByteReader rc(cut);
  CHECK_THROWS_AS(fresh->load(rc), DecodeError);
  CHECK(fresh->edges().empty());
  Bytes other;
  ByteWriter wo(other);
  algo::makeAlgorithm({.name = "choco"}, *c, 1, Vec::Zero(kDim))->save(wo);
  ByteReader ro(other);
  CHECK_THROWS_AS(fresh->load(ro), DecodeError);
}

TEST_CASE("codistill refuses a negative weight or a zero period") {
  auto c = compress::makeCompressor({.name = "fp32"});
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "codistill", .distill_weight = -1.0}, *c, 0, Vec::Zero(kDim)), ConfigError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "codistill", .distill_period = 0}, *c, 0, Vec::Zero(kDim)), ConfigError);
}

TEST_CASE("codistill on an MLP: the term pulls the nodes' predictions together and every node learns") {
  const auto [alone, alonePoor] = trainCodistillRing({.name = "codistill", .distill_weight = 0.0});  // six independent learners
  const auto [together, worst] = trainCodistillRing({.name = "codistill", .distill_weight = 2.0});
  INFO("prediction spread alone " << alone << ", codistilled " << together << "; worst node " << worst << " (alone " << alonePoor << ")");
  CHECK(together < 0.5 * alone);
  CHECK(worst > 0.78);        // measured 0.826
  CHECK(worst > alonePoor);   // measured 0.750: the worst node learns from its neighbours' predictions
}
