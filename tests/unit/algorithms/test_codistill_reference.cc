// codistill with a reference set (algorithms/codistill_reference.h): each round against the rule computed
// here (the target is the mean of the neighbours' predictions as sent in fp32, the step uses the previous
// round's target), refreshes only in their rounds with empty messages between, a neighbour that never spoke
// left out of the mean, bad messages refused with the state unchanged, the checkpoint, and training real MLPs
// where the term on shared unlabeled rows pulls the nodes' predictions together.
#include <doctest/doctest.h>

#include <map>

#include "algorithms/algorithm.h"
#include "algorithms/codistill_reference.h"
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
constexpr std::size_t kValues = 6;  // "R x C": the first 6 entries of x stand for the predictions
constexpr double kLr = 0.1;
constexpr double kWeight = 0.8;

Vec targetOf(PeerId id) { return gossipStart(id + 40, kDim); }

// A quadratic stand-in: predictions are x's first kValues entries; the term's gradient is weight (head(x) - q)
// on those entries, so the rule can be checked exactly. Records the target it was given.
class PullAndPredict final : public training::GradientEstimator {
 public:
  explicit PullAndPredict(Vec target) : target_(std::move(target)) {}
  double estimate(const Vec& x, Vec& g) override {
    g = x - target_;
    lastTarget.clear();
    return 0.5 * g.squaredNorm();
  }
  double estimateWithReference(const Vec& x, std::span<const double> q, double weight, Vec& g) override {
    estimate(x, g);
    for (std::size_t i = 0; i < kValues; ++i) g[static_cast<Eigen::Index>(i)] += weight * (x[static_cast<Eigen::Index>(i)] - q[i]);
    lastTarget.assign(q.begin(), q.end());
    return 0.0;
  }
  void predictReference(const Vec& x, std::vector<double>& probs) override { probs.assign(x.data(), x.data() + kValues); }
  std::vector<double> lastTarget;

 private:
  Vec target_;
};

algo::AlgorithmParams params(std::uint64_t period = 1) {
  return {.name = "codistill", .distill_weight = kWeight, .distill_period = period, .distill_reference_values = kValues};
}

MiniNet::Factory nodes(const algo::AlgorithmParams& p, const compress::Compressor& c) {
  return [&p, &c](PeerId id) {
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return kLr; };
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(p, c, id, gossipStart(id, kDim)),
                                        std::make_unique<PullAndPredict>(targetOf(id)), std::move(sched));
  };
}

// What a neighbour holds of node j's predictions: head(x_j) through fp32.
std::vector<double> sent(const Vec& x) {
  std::vector<double> v(kValues);
  for (std::size_t i = 0; i < kValues; ++i) v[i] = static_cast<float>(x[static_cast<Eigen::Index>(i)]);
  return v;
}

}  // namespace

TEST_CASE("codistill reference: the target is the neighbours' mean prediction as sent - the step uses the last one") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto p = params();
  MiniNet net(6, nodes(p, *c));
  std::map<PeerId, std::vector<double>> target;  // the target each node holds after the last round
  for (Round t = 0; t < 8; ++t) {
    std::map<PeerId, Vec> want;
    for (auto& [id, n] : net.nodes()) {
      const Vec& x = n->algorithm().x();
      Vec g = x - targetOf(id);
      if (t > 0)
        for (std::size_t i = 0; i < kValues; ++i) g[static_cast<Eigen::Index>(i)] += kWeight * (x[static_cast<Eigen::Index>(i)] - target[id][i]);
      want[id] = x - kLr * g;
    }
    net.round(t);
    auto all = net.nodes();
    for (auto& [id, n] : all) {
      CAPTURE(id);
      CHECK((n->algorithm().x() - want.at(id)).norm() <= 1e-14 * want.at(id).norm());
      CHECK(dynamic_cast<PullAndPredict&>(n->estimator()).lastTarget == (t == 0 ? std::vector<double>{} : target[id]));
      // The new target: the mean over this round's row of what the neighbours sent (their x after the step).
      std::vector<double> mean(kValues, 0.0);
      const auto& row = net.row(id);
      for (const auto& [j, w] : row.neighbors) {
        const auto v = sent(all.at(j)->algorithm().x());
        for (std::size_t i = 0; i < kValues; ++i) mean[i] += v[i];
      }
      for (auto& v : mean) v /= static_cast<double>(row.neighbors.size());
      const auto got = n->algorithm().referenceTarget();
      REQUIRE(got.size() == kValues);
      for (std::size_t i = 0; i < kValues; ++i) CHECK(got[i] == doctest::Approx(mean[i]).epsilon(1e-15));
      target[id].assign(got.begin(), got.end());
    }
  }
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("codistill reference: predictions go only in rounds t % distill_period == 0 - a silent neighbour is left out") {
  auto c = compress::makeCompressor({.name = "fp16"});
  const auto p = params(3);
  auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
  auto b = algo::makeAlgorithm(p, *c, 1, gossipStart(1, kDim));
  const auto head = [](const Vec& x, std::vector<double>& out) { out.assign(x.data(), x.data() + kValues); };
  a->setPredictor(head);
  b->setPredictor(head);
  // Node 2 is in a's row but never sends: a's target is b's prediction alone.
  const topology::MixingRow row{1.0 / 3, {{1, 1.0 / 3}, {2, 1.0 / 3}}};
  const Vec g = Vec::Zero(kDim);
  for (Round t = 0; t < 7; ++t) {
    CAPTURE(t);
    compress::Encoded ma, mb;
    a->prepare(t, g, kLr, ma);
    b->prepare(t, g, kLr, mb);
    CHECK(mb.bytes.empty() == (t % 3 != 0));
    if (t % 3 == 0) CHECK(mb.size() == c->encodedBytes(kValues));
    const std::vector<algo::Incoming> msgs{{1, 0, mb.view()}};
    a->apply(t, msgs, row);
    const auto got = a->referenceTarget();
    const auto& bSent = dynamic_cast<algo::CodistillReference&>(*b).ownPredictions();
    CHECK(std::vector<double>(got.begin(), got.end()) == bSent);  // kept between refreshes
  }
}

TEST_CASE("codistill reference: a malformed message is refused with the state unchanged - sparse codecs are refused") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto p = params();
  auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
  a->setPredictor([](const Vec& x, std::vector<double>& out) { out.assign(x.data(), x.data() + kValues); });
  const topology::MixingRow row{0.5, {{1, 0.5}}};
  compress::Encoded ok;
  Rng rng(1);
  std::vector<double> v(kValues, 0.25);
  c->encode(std::span<const double>(v), rng, ok);
  const std::vector<algo::Incoming> good{{1, 0, ok.view()}};
  a->apply(0, good, row);
  const std::vector<double> before(a->referenceTarget().begin(), a->referenceTarget().end());
  std::vector<double> longer(kValues + 1, 0.25);
  compress::Encoded bad;
  c->encode(std::span<const double>(longer), rng, bad);
  const std::vector<algo::Incoming> msgs{{1, 0, bad.view()}};
  CHECK_THROWS_AS(a->apply(1, msgs, row), algo::RejectedMessage);
  CHECK(std::vector<double>(a->referenceTarget().begin(), a->referenceTarget().end()) == before);
  auto topk = compress::makeCompressor({.name = "topk", .ratio = 0.5});
  CHECK_THROWS_AS(algo::makeAlgorithm(p, *topk, 0, Vec::Zero(kDim)), ConfigError);
}

TEST_CASE("codistill reference: checkpoint round trip - and a truncated state is refused") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto p = params();
  MiniNet net(6, nodes(p, *c));
  for (Round t = 0; t < 4; ++t) net.round(t);
  const auto& a = net.nodes().at(2)->algorithm();
  Bytes saved;
  ByteWriter w(saved);
  a.save(w);
  auto copy = algo::makeAlgorithm(p, *c, 2, Vec::Zero(kDim));
  ByteReader r(saved);
  copy->load(r);
  r.expectEnd();
  Bytes again;
  ByteWriter w2(again);
  copy->save(w2);
  CHECK(again == saved);
  CHECK(copy->x().cwiseEqual(a.x()).all());
  auto other = algo::makeAlgorithm(p, *c, 2, gossipStart(5, kDim));
  const Vec before = other->x();
  for (std::size_t cut : {std::size_t{3}, saved.size() / 2, saved.size() - 1}) {
    ByteReader shortReader(std::span<const std::byte>(saved).first(cut));
    CHECK_THROWS_AS(other->load(shortReader), DecodeError);
    CHECK(other->x().cwiseEqual(before).all());
  }
}

TEST_CASE("codistill reference on an MLP: the term on shared unlabeled rows pulls the nodes' predictions together") {
  // 100 unlabeled rows every node holds; a prediction is 100 x 3 values.
  const training::Dataset reference = mixture(100, 55);
  const auto run = [&](double weight) {
    return trainCodistillRing({.name = "codistill", .distill_weight = weight, .distill_reference_values = 300}, &reference);
  };
  const auto [alone, alonePoor] = run(0.0);
  const auto [together, worst] = run(2.0);
  INFO("prediction spread alone " << alone << ", codistilled " << together << "; worst node " << worst << " (alone " << alonePoor << ")");
  CHECK(together < 0.5 * alone);  // measured 0.339 -> 0.138
  CHECK(worst > alonePoor);        // measured 0.750 -> 0.816
}
