// Churn through the round engine: restarts are new incarnations (drop old edges, open new ones), so the
// dual stays balanced (sum_i d_i = 0) after every round and Prox-LEAD still reaches the exact optimum of
// whoever is alive at the end. Also: checkpoints of a whole simulation resume bit-identically.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/support/precision.h"
#include "compressors/compressor.h"
#include "sim/simulator.h"
#include "training/model_factory.h"
#include "training/synthetic.h"
#include "sim_fixture.h"

using namespace gossip;
using gossip::testing::Fixture;

namespace {


// Runs the setup, checking |sum_i d_i|_inf after every round.
std::vector<sim::EvalRecord> runChecked(const sim::SimSetup& setup, double& worstDual) {
  sim::Simulator s(setup);
  worstDual = 0.0;
  return s.run([&](const sim::EvalRecord&) {
    if (auto d = s.dualSum()) worstDual = std::max<double>(worstDual, d->lpNorm<Eigen::Infinity>());
  });
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("gossipd-" + tag + "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("sim churn: a crash and a rejoin of the same id in the same round keep sum d = 0 and stay exact") {
  Fixture f(8, "prox_lead", {.name = "lead", .bits = 2});
  f.setup.rounds = 2500;
  f.setup.eval_every = 1;
  f.setup.crashes = {{3, 200}};
  f.setup.joins = {{3, 200}};  // the same round: a restart, i.e. a new incarnation of node 3
  double worst = 0;
  const auto rec = runChecked(f.setup, worst);
  CHECK(worst < gossip::precision::tol(1e-12, 1e-5));
  CHECK(rec.back().alive == 8);
  REQUIRE(rec.back().rel_error);
  CHECK(*rec.back().rel_error <= gossip::precision::tol(1e-8, 1e-4));
  CHECK(rec.back().control_bytes_sent > 0);  // the new incarnation's edges were opened by handshake
}

TEST_CASE("sim churn: repeated restarts of one node - with other crashes - keep sum d = 0 and converge") {
  Fixture f(8, "prox_lead", {.name = "lead", .bits = 2});
  f.setup.rounds = 3500;
  f.setup.eval_every = 5;
  f.setup.crashes = {{2, 100}, {2, 300}, {5, 400}, {2, 600}, {2, 900}};
  f.setup.joins = {{2, 150}, {2, 300}, {2, 600}, {2, 1000}};
  double worst = 0;
  const auto rec = runChecked(f.setup, worst);
  CHECK(worst < gossip::precision::tol(1e-12, 1e-5));
  CHECK(rec.back().alive == 7);
  REQUIRE(rec.back().rel_error);
  CHECK(*rec.back().rel_error <= gossip::precision::tol(1e-8, 1e-4));  // against the optimum of the 7 alive nodes
}

TEST_CASE("sim checkpoint: save after round t - resume in a new simulator - end bit-identical") {
  struct Case {
    const char* algorithm;
    compress::CompressorSpec comp;
    const char* estimator;
  };
  // Every algorithm with every estimator (saga means the scalar-memory form for these linear models).
  std::vector<Case> cases;
  const std::pair<const char*, compress::CompressorSpec> algos[] = {
      {"dpsgd", {.name = "fp32"}},       {"deepsqueeze", {.name = "topk", .ratio = 0.2}},
      {"choco", {.name = "qsgd", .levels = 4}}, {"nids", {.name = "fp32"}},
      {"lead", {.name = "lead", .bits = 2}},  {"prox_lead", {.name = "lead", .bits = 2}}};
  for (const auto& [a, comp] : algos)
    for (const char* est : {"sgd", "full", "lsvrg", "saga", "saga_table"}) cases.push_back({a, comp, est});
  for (const auto& c : cases) {
    INFO(c.algorithm << " with " << c.estimator);
    Fixture f(9, c.algorithm, c.comp);
    f.setup.algorithm.gamma = std::string(c.algorithm) == "choco" ? 0.3 : 1.0;
    f.setup.lr.lr = 0.1;
    f.setup.estimator = {.kind = c.estimator, .batch = 4};
    f.setup.rounds = 120;
    f.setup.eval_every = 40;
    f.setup.crashes = {{4, 30}};
    f.setup.joins = {{8, 50}, {4, 90}};  // a join before the save, a restart after it
    const auto straight = sim::Simulator(f.setup).run();

    TempDir dir("simckpt");
    sim::SimSetup first = f.setup;
    first.save_after = 70;
    first.save_dir = dir.path.string();
    const auto a = sim::Simulator(first).run();
    sim::SimSetup second = f.setup;
    second.resume_dir = dir.path.string();
    const auto b = sim::Simulator(second).run();
    REQUIRE(a.size() == straight.size());
    REQUIRE(!b.empty());
    const auto& x = straight.back();
    const auto& y = b.back();
    CHECK(y.round == x.round);
    CHECK(y.loss == x.loss);  // bit-identical, not close
    CHECK(y.consensus_distance == x.consensus_distance);
    CHECK(y.bytes_sent == x.bytes_sent);
    CHECK(y.control_bytes_sent == x.control_bytes_sent);
    CHECK(y.alive == x.alive);
  }
}

TEST_CASE("sim checkpoint: a missing or corrupt checkpoint directory is a clear DataError") {
  Fixture f(8, "prox_lead", {.name = "lead", .bits = 2});
  f.setup.rounds = 20;
  TempDir dir("simbad");
  f.setup.resume_dir = dir.path.string();
  CHECK_THROWS_AS(sim::Simulator(f.setup).run(), DataError);
  sim::SimSetup save = f.setup;
  save.resume_dir.clear();
  save.save_after = 10;
  save.save_dir = dir.path.string();
  sim::Simulator(save).run();
  // Truncate one node's file: the resume must refuse it, naming the file.
  const auto victim = dir.path / "node-3.ckpt";
  std::filesystem::resize_file(victim, std::filesystem::file_size(victim) / 2);
  CHECK_THROWS_AS(sim::Simulator(f.setup).run(), DataError);
}
