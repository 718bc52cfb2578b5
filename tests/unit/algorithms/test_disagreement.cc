// Algorithm::disagreement(): || y_i - sum_j w_ij y_j || over what each method mixes. With the fp32 codec and
// zero gradients, every method's first mixed values are the fp32-rounded starting models (CHOCO's and LEAD's
// replicas start at zero, so the first message carries the whole model), which gives an independent oracle
// computed here from the rows and the starting points alone.
#include <doctest/doctest.h>

#include <cmath>

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
Vec fp32(const Vec& x) { return x.cast<float>().cast<Real>(); }
}  // namespace

TEST_CASE("disagreement is NaN before mixing - then || y_i - sum_j w_ij y_j || of the mixed values") {
  for (const char* name : {"dpsgd", "deepsqueeze", "choco", "ed", "nids", "lead", "prox_lead"}) {
    CAPTURE(name);
    algo::AlgorithmParams params{.name = name, .eta = 0.5, .gamma = 0.5};
    auto c = compress::makeCompressor({.name = "fp32"});
    constexpr Eigen::Index d = 40;
    MiniNet net(6, gossipOnly(params, *c, d));
    for (auto& [id, n] : net.nodes()) CHECK(std::isnan(n->algorithm().disagreement()));
    // LEAD-type methods spend round 0 on the local start step (nothing mixed, x unchanged by a zero gradient).
    Round t = 0;
    for (; t < 3; ++t) {
      std::map<PeerId, Vec> y;
      for (auto& [id, n] : net.nodes()) y[id] = fp32(n->algorithm().x());
      net.round(t);
      bool mixed = false;
      for (auto& [id, n] : net.nodes()) {
        const double got = n->algorithm().disagreement();
        if (std::isnan(got)) continue;
        mixed = true;
        const auto& row = net.row(id);
        Vec mix = row.self * y.at(id);
        for (const auto& [j, w] : row.neighbors) mix += w * y.at(j);
        const double want = (y.at(id) - mix).norm();
        CAPTURE(id);
        REQUIRE(want > 1.0);  // the starting points differ a lot: the check is not 0 == 0
        CHECK(got == doctest::Approx(want).epsilon(gossip::precision::tol(1e-12, 1e-4)));
      }
      if (mixed) break;
    }
    CHECK(t < 2);
  }
}

TEST_CASE("disagreement falls towards zero as D-PSGD reaches consensus - a missing neighbour counts as agreeing") {
  algo::AlgorithmParams params{.name = "dpsgd"};
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(5, gossipOnly(params, *c, 20));
  net.round(0);
  const double first = net.nodes().at(2)->algorithm().disagreement();
  for (Round t = 1; t < 200; ++t) net.round(t);
  const double last = net.nodes().at(2)->algorithm().disagreement();
  CHECK(last < 1e-3 * first);
  // Every message to node 2 dropped: it mixes its own value in their place, so it sees no disagreement.
  net.round(200, [](PeerId, PeerId to, Round) { return to == 2; });
  CHECK(net.nodes().at(2)->algorithm().disagreement() == 0.0);
}
