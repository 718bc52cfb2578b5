// A node whose gradients come from outside (the daemon's trainer bridge, training/external_gradient.h) takes
// exactly the steps of a node that computes them itself, start step included.
#include <doctest/doctest.h>

#include <limits>
#include <memory>

#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "training/external_gradient.h"

using namespace gossip;
using training::Vec;

namespace {

// f(x) = 1/2 ||x - b||^2 with a loss that identifies the point it was evaluated at.
Vec gradAt(const Vec& x, const Vec& b) { return x - b; }
double lossAt(const Vec& x, const Vec& b) { return 0.5 * (x - b).squaredNorm(); }

class Quadratic final : public training::GradientEstimator {
 public:
  explicit Quadratic(Vec b) : b_(std::move(b)) {}
  double estimate(const Vec& x, Vec& g) override {
    g = gradAt(x, b_);
    return lossAt(x, b_);
  }

 private:
  Vec b_;
};

}  // namespace

TEST_CASE("ExternalGradient hands over what was supplied - zero when asked - and refuses an unsupplied gradient") {
  training::ExternalGradient e(3);
  Vec g, x = Vec::Zero(3);
  CHECK_THROWS(e.estimate(x, g));
  e.buffer() = Vec{{1.0, 2.0, 3.0}};
  e.supply(0.5);
  CHECK(e.estimate(x, g) == 0.5);
  CHECK(g == Vec{{1.0, 2.0, 3.0}});
  CHECK_THROWS(e.estimate(x, g));  // one supply, one gradient
  e.supplyZero(0.25);
  CHECK(e.estimate(x, g) == 0.25);
  CHECK(g == Vec::Zero(3));
  e.buffer() = Vec{{4.0, 5.0, 6.0}};
  e.supply(1.0);
  e.estimate(x, g);
  CHECK(g == Vec{{4.0, 5.0, 6.0}});
  e.supplyZero(0.0);  // the caller's buffer held a gradient: it must be cleared, not reused
  e.estimate(x, g);
  CHECK(g == Vec::Zero(3));
  CHECK(e.sampleGradients() == 4);
  CHECK_THROWS(e.estimate(Vec::Zero(2), g));
}

TEST_CASE("a node fed gradients from outside takes the same steps as one computing them (LEAD - with its start step)") {
  const auto codec = compress::makeCompressor({.name = "fp32"});
  algo::AlgorithmParams p;
  p.name = "lead";
  p.gamma = 0.5;
  const Vec x0{{0.5, -1.0, 2.0, 0.0}};
  const Vec b{{1.0, 2.0, -3.0, 4.0}};
  algo::NodeSchedule sched;
  sched.lr = [](Round t) { return 0.1 / (1.0 + static_cast<double>(t)); };
  algo::Node own(0, algo::makeAlgorithm(p, *codec, 0, x0), std::make_unique<Quadratic>(b), sched);
  auto ext = std::make_unique<training::ExternalGradient>(x0.size());
  training::ExternalGradient& feed = *ext;
  algo::Node fed(0, algo::makeAlgorithm(p, *codec, 0, x0), std::move(ext), sched);
  const topology::MixingRow alone;  // no neighbours: self weight 1
  int startSteps = 0;
  const Real* storage = nullptr;
  for (Round t = 0; t < 5; ++t) {
    compress::Encoded a, c;
    own.beginRound(t, a);
    // The runtime's part: a gradient at the node's current x before every step that needs one.
    if (fed.needsStartStep(t)) {
      ++startSteps;
      const Vec& x = fed.algorithm().x();
      feed.buffer() = gradAt(x, b);
      feed.supply(lossAt(x, b));
      fed.startStep(t);
    }
    const Vec& x = fed.algorithm().x();
    const Vec gx = gradAt(x, b);
    feed.buffer() = gx;  // copied into the buffer, as the bridge copies from the trainer's memory
    feed.supply(lossAt(x, b));
    // The node's g is the estimator's buffer (gradientStorage): one gradient vector, the same every round,
    // where a swap of the node's and the estimator's vectors kept two.
    if (!storage) storage = feed.buffer().data();
    CHECK(feed.buffer().data() == storage);
    fed.beginRound(t, c);
    CHECK(a.bytes == c.bytes);
    CHECK(own.lastLoss() == fed.lastLoss());
    own.endRound(t, {}, alone);
    fed.endRound(t, {}, alone);
    CHECK(own.algorithm().x() == fed.algorithm().x());
  }
  CHECK(startSteps == 1);
  CHECK(own.gradientCalls() == fed.gradientCalls());
  CHECK(!fed.needsStartStep(5));
}

namespace {
// A gradient of zeros written out in full: what model mode did before takeZeroGradient.
class ZeroVector final : public training::GradientEstimator {
 public:
  double estimate(const Vec& x, Vec& g) override {
    g = Vec::Zero(x.size());
    return 0.5;
  }
};
}  // namespace

TEST_CASE("model mode: a zero gradient taken without a vector gives the rounds of a vector of zeros - bit for bit") {
  struct Case {
    const char* algorithm;
    const char* codec;
  };
  for (const Case k : {Case{"dpsgd", "fp32"}, Case{"dpsgd", "qsgd"}, Case{"deepsqueeze", "topk"}, Case{"choco", "topk"}}) {
    CAPTURE(k.algorithm);
    CAPTURE(k.codec);
    const auto codec = compress::makeCompressor({.name = k.codec, .ratio = 0.5});
    algo::AlgorithmParams p;
    p.name = k.algorithm;
    p.eta = 0.5;
    p.gamma = 0.5;
    const Vec x0{{0.5, -1.0, 2.0, 0.0, 3.0, -0.25}};
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.1; };
    algo::Node vector(0, algo::makeAlgorithm(p, *codec, 0, x0), std::make_unique<ZeroVector>(), sched);
    auto ext = std::make_unique<training::ExternalGradient>(x0.size());
    training::ExternalGradient& feed = *ext;
    algo::Node none(0, algo::makeAlgorithm(p, *codec, 0, x0), std::move(ext), sched);
    REQUIRE(none.algorithm().acceptsZeroGradient());
    const Vec neighbour0 = Vec::Zero(x0.size());
    for (algo::Node* n : {&vector, &none})
      n->algorithm().addEdge({1, 0}, std::span<const Real>(neighbour0.data(), neighbour0.size()));  // CHOCO's replica
    topology::MixingRow row;
    row.self = 0.5;
    row.neighbors = {{1, 0.5}};
    Vec theirs{{1.0, 2.0, -3.0, 4.0, 0.5, 1.5}};
    for (Round t = 0; t < 6; ++t) {
      compress::Encoded a, b, m;
      vector.beginRound(t, a);
      feed.supplyZero(0.5);
      none.beginRound(t, b);
      CHECK(a.bytes == b.bytes);
      Rng rng(t);
      codec->encode(std::span<const Real>(theirs.data(), theirs.size()), rng, m);
      const algo::Incoming in{1, 0, m.view()};
      vector.endRound(t, std::span(&in, 1), row);
      none.endRound(t, std::span(&in, 1), row);
      CHECK(vector.algorithm().x() == none.algorithm().x());
      theirs *= 0.9;
    }
    CHECK(none.algorithm().x() != x0);  // the rounds did mix
    CHECK(feed.sampleGradients() == 6);
  }
}

TEST_CASE("gradient mode: a gradient read where the trainer wrote it gives the rounds of a copied one - bit for bit") {
  // Two nodes on an edge, twice: fed by copies into the estimator's buffer (what the bridge does for a float64
  // or bfloat16 trainer), and fed by pointers into "the trainer's memory" (supplyShared, a float32 trainer).
  // The second must never make the buffer: no copy of d values, no second gradient vector.
  struct Case {
    const char* algorithm;
    const char* codec;
  };
  for (const Case k : {Case{"lead", "fp32"}, Case{"lead", "qsgd"}, Case{"dpsgd", "fp32"}, Case{"nids", "fp32"},
                       Case{"choco", "topk"}}) {
    CAPTURE(k.algorithm);
    CAPTURE(k.codec);
    // LEAD takes only unbiased codecs: qsgd's unbiased form exercises its general (non-fp32) path.
    const auto codec = compress::makeCompressor({.name = k.codec, .ratio = 0.5, .unbiased = true});
    algo::AlgorithmParams p;
    p.name = k.algorithm;
    p.eta = 0.5;
    p.gamma = 0.5;
    const Vec x0[2] = {Vec{{0.5, -1.0, 2.0, 0.0, 3.0, -0.25}}, Vec{{1.5, 0.0, -2.0, 1.0, 0.5, 0.75}}};
    const Vec b[2] = {Vec{{1.0, 2.0, -3.0, 4.0, 0.5, 1.5}}, Vec{{-1.0, 0.0, 3.0, 2.0, -0.5, 1.0}}};
    algo::NodeSchedule sched;
    sched.lr = [](Round t) { return 0.1 / (1.0 + 0.1 * static_cast<double>(t)); };
    struct Fed {
      training::ExternalGradient* feed;
      std::unique_ptr<algo::Node> node;
      std::shared_ptr<Vec> trainer;  // the trainer's gradient memory (only the shared pair reads it)
    };
    auto make = [&](PeerId i) {
      auto ext = std::make_unique<training::ExternalGradient>(x0[i].size());
      Fed f{ext.get(), std::make_unique<algo::Node>(i, algo::makeAlgorithm(p, *codec, i, x0[i]), std::move(ext), sched),
            std::make_shared<Vec>()};
      f.node->algorithm().addEdge({1 - i, 0}, std::span<const Real>(x0[1 - i].data(), x0[1 - i].size()));
      return f;
    };
    Fed copied[2] = {make(0), make(1)}, shared[2] = {make(0), make(1)};
    // The runtime's part: the gradient at the node's current x, copied or handed over in place.
    auto supply = [&](Fed& f, PeerId i, bool inPlace) {
      const Vec& x = f.node->algorithm().x();
      if (inPlace) {
        *f.trainer = gradAt(x, b[i]);
        f.feed->supplyShared(f.trainer->data(), f.trainer, lossAt(x, b[i]));
      } else {
        f.feed->buffer() = gradAt(x, b[i]);
        f.feed->supply(lossAt(x, b[i]));
      }
    };
    topology::MixingRow row;
    row.self = 0.5;
    row.neighbors = {{1, 0.5}};
    for (Round t = 0; t < 8; ++t) {
      compress::Encoded out[2][2];  // [pair][node]
      for (int pair = 0; pair < 2; ++pair)
        for (PeerId i = 0; i < 2; ++i) {
          Fed& f = pair == 0 ? copied[i] : shared[i];
          if (f.node->needsStartStep(t)) {
            supply(f, i, pair == 1);
            f.node->startStep(t);
          }
          supply(f, i, pair == 1);
          f.node->beginRound(t, out[pair][i]);
        }
      for (PeerId i = 0; i < 2; ++i) CHECK(out[0][i].bytes == out[1][i].bytes);
      for (int pair = 0; pair < 2; ++pair)
        for (PeerId i = 0; i < 2; ++i) {
          Fed& f = pair == 0 ? copied[i] : shared[i];
          topology::MixingRow r = row;
          r.neighbors = {{1 - i, 0.5}};
          const algo::Incoming in{1 - i, 0, out[pair][1 - i].view()};
          f.node->endRound(t, std::span(&in, 1), r);
        }
      for (PeerId i = 0; i < 2; ++i) {
        CHECK(copied[i].node->algorithm().x() == shared[i].node->algorithm().x());
        CHECK(copied[i].node->lastLoss() == shared[i].node->lastLoss());
      }
    }
    for (PeerId i = 0; i < 2; ++i) {
      CHECK(copied[i].node->algorithm().x() != x0[i]);  // the rounds did move x
      CHECK(shared[i].feed->gradientStorage()->size() == 0);  // read in place: the buffer was never made
      CHECK(shared[i].feed->sampleGradients() == copied[i].feed->sampleGradients());
    }
  }
}

TEST_CASE("a gradient read in place keeps its memory until the next supply or the end of its round - and a non-finite one ends the run") {
  training::ExternalGradient e(3);
  auto mem = std::make_shared<Vec>(Vec{{1.0, 2.0, 3.0}});
  std::weak_ptr<Vec> watch = mem;
  e.supplyShared(mem->data(), mem, 0.5);
  mem.reset();                  // the bridge dropped its mapping (the trainer detached during the round)
  CHECK(!watch.expired());      // ... the estimator still holds it
  const auto s = e.takeSharedGradient();
  REQUIRE(s.has_value());
  CHECK(s->loss == 0.5);
  CHECK(s->data[2] == 3.0f);
  CHECK(!e.takeSharedGradient());  // one supply, one gradient
  CHECK(!watch.expired());        // still readable until the next supply: the method holds it until apply
  e.supplyZero(0.0);
  CHECK(watch.expired());
  // The runtime's end of a round lets go of it too (TrainerInput::roundEnded), taken or not: a final
  // consensus round is supplied a gradient it never takes.
  for (const bool taken : {true, false}) {
    auto mem1 = std::make_shared<Vec>(Vec{{7.0, 8.0, 9.0}});
    std::weak_ptr<Vec> watch1 = mem1;
    const Real* at = mem1->data();
    e.supplyShared(at, std::move(mem1), 0.5);
    if (taken) REQUIRE(e.takeSharedGradient().has_value());
    CHECK(!watch1.expired());
    e.releaseShared();
    CHECK(watch1.expired());
    CHECK(!e.takeSharedGradient());  // nothing left to take
  }
  // A caller that cannot read in place gets a copy.
  auto mem2 = std::make_shared<Vec>(Vec{{4.0, 5.0, 6.0}});
  e.supplyShared(mem2->data(), mem2, 1.0);
  Vec g, x = Vec::Zero(3);
  CHECK(e.estimate(x, g) == 1.0);
  CHECK(g == Vec{{4.0, 5.0, 6.0}});

  // Node's divergence check reads the shared gradient too.
  const auto codec = compress::makeCompressor({.name = "fp32"});
  algo::AlgorithmParams p;
  p.name = "lead";
  auto ext = std::make_unique<training::ExternalGradient>(3);
  training::ExternalGradient& feed = *ext;
  algo::NodeSchedule sched;
  sched.lr = [](Round) { return 0.1; };
  algo::Node n(0, algo::makeAlgorithm(p, *codec, 0, Vec::Zero(3)), std::move(ext), sched);
  auto bad = std::make_shared<Vec>(Vec{{0.0, std::numeric_limits<Real>::infinity(), 0.0}});
  feed.supplyShared(bad->data(), bad, 0.0);
  CHECK_THROWS_WITH(n.startStep(0), doctest::Contains("the gradient became non-finite"));
}
