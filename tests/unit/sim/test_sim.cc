// The simulator end to end on small synthetic problems, with the real topology, training and compressor
// libraries: exactness of Prox-LEAD, churn (crash and join) through edge state, byte accounting, message
// drops and determinism.
#include <doctest/doctest.h>

#include "tests/support/precision.h"
#include "compressors/compressor.h"
#include "engine/frame.h"
#include "sim/simulator.h"
#include "training/model_factory.h"
#include "training/synthetic.h"
#include "sim_fixture.h"

using namespace gossip;
using gossip::testing::Fixture;

namespace {


compress::CompressorSpec lead2() { return {.name = "lead", .bits = 2}; }

}  // namespace

TEST_CASE("sim: Prox-LEAD 2-bit on an 8-node ring reaches the centralized L1-logistic optimum") {
  Fixture f(8, "prox_lead", lead2());
  const auto rec = sim::Simulator(f.setup).run();
  REQUIRE(rec.back().rel_error);
  CHECK(*rec.back().rel_error < gossip::precision::tol(1e-8, 1e-4));
  CHECK(*rec.back().suboptimality < 1e-12);
  CHECK(rec.back().alive == 8);
}

TEST_CASE("sim: survivors converge to their own optimum after 1 then 2 more crashes - and a join is absorbed") {
  Fixture f(9, "prox_lead", lead2());
  f.setup.rounds = 3000;
  f.setup.crashes = {{3, 300}, {5, 700}, {6, 700}};
  f.setup.joins = {{8, 1000}};
  const auto rec = sim::Simulator(f.setup).run();
  CHECK(rec.back().alive == 6);
  REQUIRE(rec.back().rel_error);
  CHECK(*rec.back().rel_error < gossip::precision::tol(1e-8, 1e-4));  // measured against the optimum of the 6 alive nodes
}

TEST_CASE("sim: bytes_sent counts every payload and header that goes on the wire") {
  Fixture f(8, "dpsgd", {.name = "fp32"});
  f.setup.rounds = 10;
  f.setup.eval_every = 10;
  const auto rec = sim::Simulator(f.setup).run();
  const std::uint64_t dim = f.model->dim();
  const std::uint64_t perMessage = compress::kCodecHeaderBytes + 4 * dim + engine::kFrameHeaderBytes;
  CHECK(rec.back().bytes_sent == 10 * 16 * perMessage);  // 8 nodes x 2 neighbours x 10 rounds
}

TEST_CASE("sim: message drops are counted for stateless methods and refused for replica methods") {
  Fixture f(8, "deepsqueeze", {.name = "topk", .ratio = 0.25});
  f.setup.drop = 0.2;
  f.setup.rounds = 200;
  f.setup.eval_every = 200;
  const auto rec = sim::Simulator(f.setup).run();
  f.setup.threads = 2;
  CHECK(sim::Simulator(f.setup).run().back().messages_dropped == rec.back().messages_dropped);
  const double sent = 200.0 * 16;
  CHECK(rec.back().messages_dropped > 0.1 * sent);
  CHECK(rec.back().messages_dropped < 0.3 * sent);
  CHECK(std::isfinite(rec.back().loss));

  Fixture g(8, "choco", {.name = "topk", .ratio = 0.25});
  g.setup.drop = 0.1;
  CHECK_THROWS_AS(sim::Simulator(g.setup), ConfigError);
}

TEST_CASE("sim: a run is deterministic - whatever the thread count") {
  Fixture f(8, "choco", {.name = "qsgd", .levels = 4});
  f.setup.algorithm.gamma = 0.3;
  f.setup.estimator = {.kind = "sgd", .batch = 4};
  f.setup.rounds = 100;
  f.setup.eval_every = 50;
  const auto a = sim::Simulator(f.setup).run();
  const auto b = sim::Simulator(f.setup).run();
  f.setup.threads = 3;  // more threads than cores: the work split must not change any number
  const auto c = sim::Simulator(f.setup).run();
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() == c.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].loss == b[i].loss);
    CHECK(a[i].bytes_sent == b[i].bytes_sent);
    CHECK(a[i].consensus_distance == b[i].consensus_distance);
    CHECK(a[i].loss == c[i].loss);
    CHECK(a[i].consensus_distance == c[i].consensus_distance);
  }
}

TEST_CASE("sim: node counts 1 - 2 - 3 and 7 run") {
  for (std::uint32_t n : {1u, 2u, 3u, 7u}) {
    // Stronger l2 so that a single node's plain proximal gradient also converges within the budget, and a
    // smaller step: with 7 shards one node's L exceeds 2/0.5 (NIDS needs lr < 2/L_i).
    Fixture f(static_cast<int>(n), "nids", {.name = "fp32"}, 0.005, 0.2);
    f.setup.lr.lr = 0.3;
    f.setup.initial_nodes = n;
    f.setup.rounds = 1000;
    f.setup.eval_every = 1000;
    const auto rec = sim::Simulator(f.setup).run();
    INFO("n = " << n);
    REQUIRE(rec.back().rel_error);
    CHECK(*rec.back().rel_error < gossip::precision::tol(1e-8, 1e-4));
  }
}

TEST_CASE("sim: the last record evaluates every node on the whole evaluation set - earlier ones sample") {
  // 24 nodes x 50 rows: 1,200 evaluation samples (train doubles as test), above the 1,000 sampled during the run.
  Fixture f(24, "deepsqueeze", {.name = "topk", .ratio = 0.1});
  f.setup.initial_nodes = 24;
  f.setup.estimator = {.kind = "sgd", .batch = 5};
  f.setup.lr.lr = 0.2;
  f.setup.rounds = 300;
  f.setup.eval_every = 100;
  const auto rec = sim::Simulator(f.setup).run();
  REQUIRE(rec.size() == 3);
  CHECK(rec[0].node_eval_samples == 1000);
  CHECK(rec[0].node_eval_nodes == 24);
  CHECK(rec.back().node_eval_samples == f.data.samples());
  CHECK(rec.back().node_eval_nodes == 24);
  CHECK(rec.back().node_accuracy_min <= rec.back().node_accuracy_mean);
  CHECK(rec.back().node_accuracy_mean <= rec.back().node_accuracy_max);
}

TEST_CASE("sim: a final consensus phase brings every node to the average model") {
  // DeepSqueeze with top-10% on a ring of 12 leaves the nodes apart; 100 rounds of fp32 averaging at the end
  // bring them together while the average model stays where it was.
  Fixture f(12, "deepsqueeze", {.name = "topk", .ratio = 0.1});
  f.setup.initial_nodes = 12;
  f.setup.estimator = {.kind = "sgd", .batch = 5};
  f.setup.lr.lr = 0.2;
  f.setup.rounds = 400;
  f.setup.eval_every = 300;
  const auto plain = sim::Simulator(f.setup).run();
  f.setup.rounds = 500;
  f.setup.final_consensus_rounds = 100;
  const auto phased = sim::Simulator(f.setup).run();
  // Rounds 0-399 are the same training in both runs (same seeds); the second then only averages.
  REQUIRE(plain.front().round == 300);
  CHECK(phased.front().loss == plain.front().loss);
  CHECK(plain.back().consensus_distance > 1e-6);
  CHECK(phased.back().consensus_distance < 1e-6 * plain.back().consensus_distance);
  CHECK(phased.back().node_accuracy_max - phased.back().node_accuracy_min <= 1.0 / 600);
  CHECK(std::abs(phased.back().accuracy - plain.back().accuracy) <= 0.02);
}
