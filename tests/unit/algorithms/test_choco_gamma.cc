// CHOCO's consensus step (algorithms/choco.h): the default gamma = min(1, 2 delta) from the compressor, and
// gamma_adapt, which halves a step under which the nodes drift apart. The drift is real CHOCO behaviour: on a
// ring with top-k and a gradient that keeps the nodes apart, too large a gamma makes the nodes' models grow
// apart without end (checked here with the adaptation off, so the test of the adaptation can fail).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/support/precision.h"
#include "algorithms/algorithm.h"
#include "algorithms/choco.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "gossip_only.h"
#include "harness.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

constexpr Eigen::Index kDim = 200;

MiniNet::Factory chocoNodes(const algo::AlgorithmParams& params, const compress::Compressor& c) {
  return [&params, &c](PeerId id) {
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.05; };
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(params, c, id, gossipStart(id, kDim)),
                                        std::make_unique<PullTo>(gossipStart(id + 50, kDim)), std::move(sched));
  };
}

// mean_i ||x_i - xbar||^2 / ||xbar||^2
double relativeConsensus(MiniNet& net) {
  Vec avg = Vec::Zero(kDim);
  for (auto& [id, n] : net.nodes()) avg += n->algorithm().x();
  avg /= static_cast<double>(net.nodes().size());
  double s = 0;
  for (auto& [id, n] : net.nodes()) s += (n->algorithm().x() - avg).squaredNorm();
  return s / static_cast<double>(net.nodes().size()) / avg.squaredNorm();
}

// A consensus step under which top-2 of 200 on a ring of 8 drifts apart.
const double kDrift = 0.8;

struct Run {
  double early = 0, late = 0;  // relative consensus at rounds 1000 and at the end
  double gammaMin = 1, gammaMax = 0;
};

Run run(double gamma, bool adapt, Round rounds) {
  algo::AlgorithmParams params{.name = "choco", .gamma = gamma, .gamma_adapt = adapt};
  auto c = compress::makeCompressor({.name = "topk", .k = 2});
  MiniNet net(8, chocoNodes(params, *c));
  Run r;
  for (Round t = 0; t < rounds; ++t) {
    net.round(t);
    if (t + 1 == 1000) r.early = relativeConsensus(net);
  }
  r.late = relativeConsensus(net);
  for (auto& [id, n] : net.nodes()) {
    r.gammaMin = std::min(r.gammaMin, n->algorithm().consensusStep());
    r.gammaMax = std::max(r.gammaMax, n->algorithm().consensusStep());
  }
  return r;
}

}  // namespace

TEST_CASE("choco: gamma = 0 takes min(1 - 2 delta) of the compressor at the model's size (delta for rand-k and cltk) - a given gamma is kept") {
  const Vec x0 = Vec::Zero(1000);
  auto topk = compress::makeCompressor({.name = "topk", .ratio = 0.01});
  auto fp32 = compress::makeCompressor({.name = "fp32"});
  auto qsgd = compress::makeCompressor({.name = "qsgd", .levels = 4, .block = 256});
  const auto gammaOf = [&](const compress::Compressor& c, double gamma) {
    return algo::makeAlgorithm({.name = "choco", .gamma = gamma}, c, 0, x0)->consensusStep();
  };
  CHECK(gammaOf(*topk, 0.0) == doctest::Approx(0.02).epsilon(1e-15));
  CHECK(gammaOf(*fp32, 0.0) == 1.0);
  const auto q = qsgd->quality(1000);
  REQUIRE(q.kind == compress::Quality::Kind::Contraction);
  CHECK(gammaOf(*qsgd, 0.0) == doctest::Approx(std::min(1.0, 2.0 * q.value)).epsilon(1e-15));
  CHECK(gammaOf(*topk, 0.3) == 0.3);
  // A support chosen without looking at x: delta itself.
  auto randk = compress::makeCompressor({.name = "randk", .ratio = 0.01});
  auto unbiasedRandk = compress::makeCompressor({.name = "randk", .ratio = 0.01, .unbiased = true});
  CHECK(gammaOf(*randk, 0.0) == doctest::Approx(0.01).epsilon(1e-15));
  CHECK(gammaOf(*unbiasedRandk, 0.0) == doctest::Approx(0.01).epsilon(1e-15));
  auto cltk = compress::makeCompressor({.name = "cltk", .ratio = 0.01});
  CHECK(algo::makeAlgorithm({.name = "choco", .gamma = 0.0, .cltk_nodes = 4}, *cltk, 0, x0)->consensusStep() ==
        doctest::Approx(0.01).epsilon(1e-15));
  // Methods without a consensus step report none.
  CHECK(std::isnan(algo::makeAlgorithm({.name = "dpsgd"}, *topk, 0, x0)->consensusStep()));
}

TEST_CASE("choco: gamma_adapt halves a step under which the nodes drift apart - and they then converge") {
  // Without the adaptation gamma = kDrift with top-2 of 200 on a ring of 8 drifts apart.
  const Run fixed = run(kDrift, false, 4000);
  CAPTURE(fixed.early);
  CAPTURE(fixed.late);
  CHECK(fixed.gammaMax == kDrift);
  CHECK(!(fixed.late < 10 * fixed.early));  // grows (or is no longer finite)

  const Run adapted = run(kDrift, true, 4000);
  CAPTURE(adapted.early);
  CAPTURE(adapted.late);
  CAPTURE(adapted.gammaMin);
  CAPTURE(adapted.gammaMax);
  CHECK(adapted.gammaMax < kDrift);                 // every node halved at least once
  CHECK(std::isfinite(adapted.late));
  CHECK(adapted.late < adapted.early);           // and the consensus distance falls again
  // to where a small step, fixed from the start, brings it.
  const Run small = run(0.05, false, 4000);
  CAPTURE(small.late);
  // float32 state (core/real.h) comes back from the excursion (relative consensus ~600 at round 1000) more
  // slowly: 10.5 against 3.3 at round 4000, where float64 ends within 2x.
  CHECK(adapted.late < gossip::precision::tol(2, 4) * small.late);
}

TEST_CASE("choco: a checkpoint taken while gamma adapts continues bit-identically (step - window and watch)") {
  algo::AlgorithmParams params{.name = "choco", .gamma = kDrift, .gamma_adapt = true};
  auto c = compress::makeCompressor({.name = "topk", .k = 2});
  MiniNet a(8, chocoNodes(params, *c)), b(8, chocoNodes(params, *c));
  Round t = 0;
  for (; t < 1234; ++t) a.round(t);  // mid-window
  for (auto& [id, node] : a.nodes()) {
    Bytes bytes;
    ByteWriter w(bytes);
    node->algorithm().save(w);  // (the test's estimator has no state to save)
    ByteReader r(bytes, "choco state");
    b.nodes().at(id)->algorithm().load(r);
    r.expectEnd();
  }
  // Some nodes have halved already, others have not: both kinds of state cross the checkpoint.
  double lowest = 1, highest = 0;
  for (auto& [id, node] : a.nodes()) {
    lowest = std::min(lowest, node->algorithm().consensusStep());
    highest = std::max(highest, node->algorithm().consensusStep());
  }
  CHECK(lowest < kDrift);
  CHECK(highest == kDrift);
  for (; t < 4000; ++t) {
    a.round(t);
    b.round(t);
  }
  for (auto& [id, node] : a.nodes()) {
    CAPTURE(id);
    CHECK(b.nodes().at(id)->algorithm().consensusStep() == node->algorithm().consensusStep());
    CHECK(b.nodes().at(id)->algorithm().x().cwiseEqual(node->algorithm().x()).all());
  }
}

TEST_CASE("gamma = 0 (the config's default) means 1 for the LEAD family") {
  auto lead = compress::makeCompressor({.name = "lead", .bits = 2});
  const Vec x0 = Vec::Zero(100);
  for (const char* name : {"lead", "prox_lead"}) {
    CAPTURE(name);
    CHECK_NOTHROW(algo::makeAlgorithm({.name = name, .gamma = 0.0}, *lead, 0, x0));
  }
}
