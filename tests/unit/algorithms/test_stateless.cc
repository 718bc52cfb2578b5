// Properties of the stateless methods: the network average is preserved by mixing, and a missing
// neighbour is replaced by the node's own value.
#include <doctest/doctest.h>

#include "tests/support/precision.h"
#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "gossip_only.h"
#include "harness.h"
#include "problems.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

Vec average(MiniNet& net) {
  Vec s;
  for (auto& [id, n] : net.nodes()) s = s.size() ? Vec(s + n->algorithm().x()) : n->algorithm().x();
  return s / static_cast<double>(net.nodes().size());
}

double consensus(MiniNet& net) {
  const Vec a = average(net);
  double c = 0.0;
  for (auto& [id, n] : net.nodes()) c += (n->algorithm().x() - a).squaredNorm();
  return c / static_cast<double>(net.nodes().size());
}

}  // namespace

TEST_CASE("DeepSqueeze mixing preserves the network average exactly and reaches consensus") {
  algo::AlgorithmParams params{.name = "deepsqueeze", .eta = 0.5};
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(7, gossipOnly(params, *c, 30));
  const Vec avg0 = average(net);
  const double c0 = consensus(net);
  // The first round's compressed self term (fp32 of x_0) moves the average by rounding only.
  for (Round t = 0; t < 300; ++t) net.round(t);
  CHECK((average(net) - avg0).norm() < gossip::precision::tol(1e-6, 1e-4) * avg0.norm());
  CHECK(consensus(net) < 1e-6 * c0);
}

TEST_CASE("D-PSGD replaces a missing neighbour by its own value - symmetric loss keeps the average") {
  algo::AlgorithmParams params{.name = "dpsgd"};
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(8, gossipOnly(params, *c, 10));
  const Vec avg0 = average(net);
  // Drop the edge 2<->3 in both directions every odd round: each end folds w_23 into its self weight.
  auto drop = [](PeerId a, PeerId b, Round t) {
    return t % 2 == 1 && ((a == 2 && b == 3) || (a == 3 && b == 2));
  };
  for (Round t = 0; t < 200; ++t) net.round(t, drop);
  CHECK((average(net) - avg0).norm() < 1e-5 * avg0.norm());  // fp32 wire rounding only
  CHECK(consensus(net) < 1e-8);
}

TEST_CASE("algorithm factory rejects bad names and parameters") {
  auto c = compress::makeCompressor({.name = "fp32"});
  Vec x0 = Vec::Zero(3);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "nope"}, *c, 0, x0), ConfigError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "deepsqueeze", .eta = 0.0}, *c, 0, x0), ConfigError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "choco", .gamma = 1.5}, *c, 0, x0), ConfigError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "lead", .alpha = 0.0}, *c, 0, x0), ConfigError);
}

TEST_CASE("Node takes local_steps(t) - 1 local SGD steps before the communicated step") {
  // One isolated node, f(x) = ||x - 1||^2 / 2, so each step maps x -> x - lr (x - 1) exactly.
  class Quadratic final : public training::GradientEstimator {
   public:
    double estimate(const Vec& x, Vec& g) override {
      g = x - Vec::Ones(x.size());
      ++calls;
      return 0.5 * g.squaredNorm();
    }
    int calls = 0;
  };
  auto c = compress::makeCompressor({.name = "fp32"});
  auto est = std::make_unique<Quadratic>();
  Quadratic* q = est.get();
  algo::NodeSchedule sched;
  sched.lr = [](Round) { return 0.5; };
  sched.localSteps = [](Round t) { return t == 0 ? 1u : 3u; };
  algo::Node node(0, algo::makeAlgorithm({.name = "dpsgd"}, *c, 0, Vec::Zero(4)), std::move(est), sched);
  compress::Encoded out;
  const topology::MixingRow alone{};
  double expect = 0.0;  // every coordinate follows e <- e + 0.5 (1 - e)
  for (Round t = 0; t < 3; ++t) {
    node.beginRound(t, out);
    node.endRound(t, {}, alone);
    for (unsigned s = 0; s < (t == 0 ? 1u : 3u); ++s) expect += 0.5 * (1.0 - expect);
    CHECK(node.algorithm().x()[0] == doctest::Approx(expect).epsilon(1e-6));
  }
  CHECK(q->calls == 1 + 3 + 3);
  CHECK(node.gradientCalls() == 7);
}
