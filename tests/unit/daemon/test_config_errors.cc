// Config errors: every class of user mistake must end in ONE single-line ConfigError that names the
// file or the section.key, never in a crash or a silent default (DESIGN.md §2).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/unit/daemon/config_test_util.h"

namespace gossip::daemon {
namespace {

using namespace testutil;
namespace fs = std::filesystem;

TEST_CASE("missing - unreadable and syntactically broken files name the file") {
  const std::string missing = (fs::temp_directory_path() / "gossip_no_such_dir" / "nope.toml").string();
  try {
    (void)loadConfig(missing, {});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(has(e.what(), missing));
    CHECK(has(e.what(), "No such file"));
  }
  CHECK_THROWS_WITH_AS((void)loadConfig(fs::temp_directory_path().string(), {}), doctest::Contains("is a directory"),
                       ConfigError);

  TempFile bad("[algorithm]\nlr = 0.1\nrounds = = 3\n", "broken.toml");
  try {
    (void)loadConfig(bad.arg(), {});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(has(msg, bad.path.string() + ":3:"));  // file:line:col
    CHECK_FALSE(has(msg, "\n"));
  }
  checkFails("[algorithm\nlr = 1", {}, "test.toml:1:");
}

TEST_CASE("unknown sections and keys are named - with a suggestion when one is close") {
  checkFails("[algorithm]\nlrr = 0.1\n", {}, "unknown key 'algorithm.lrr' (did you mean 'algorithm.lr'?)");
  checkFails("[compressor]\nratoi = 0.1\n", {}, "did you mean 'compressor.ratio'?");
  checkFails("[algorithm]\nbits = 4\n", {}, "unknown key 'algorithm.bits' (did you mean 'compressor.bits'?)");
  checkFails("[algoritm]\nlr = 0.1\n", {}, "unknown section 'algoritm' (did you mean 'algorithm'?)");
  checkFails("[gpu]\ncount = 1\n", {}, "unknown section 'gpu'");
  checkFails("lr = 0.1\n", {}, "unknown key 'lr' (did you mean 'algorithm.lr'?)");
  checkFails("[monitor]\nport = 1\n", {}, "unknown key 'monitor.port'");
  checkFails("algorithm = 3\n", {}, "algorithm: expected a table, got integer");
  checkFails("", {"algorithm.lrr=0.1"}, "unknown key 'algorithm.lrr' (did you mean 'algorithm.lr'?)");
  checkFails("", {"algoritm.lr=0.1"}, "unknown section 'algoritm'");
  checkFails("[[faults.crash]]\nnod = 1\nround = 2\n", {}, "faults.crash[0]: unknown key 'nod' (did you mean 'node'?)");
  checkFails("[[faults.crash]]\nround = 2\n", {}, "faults.crash[0]: missing key 'node'");
  // A completely unrelated key gets no suggestion.
  const std::string msg = errorOf("[algorithm]\nzzzzzz = 1\n");
  CHECK(has(msg, "unknown key 'algorithm.zzzzzz'"));
  CHECK_FALSE(has(msg, "did you mean"));
}

TEST_CASE("wrong types are named with the expected and the actual type") {
  checkFails("[algorithm]\nrounds = \"ten\"\n", {}, "algorithm.rounds: expected an integer, got string");
  checkFails("[algorithm]\nrounds = 10.5\n", {}, "algorithm.rounds: expected an integer, got float");
  checkFails("[algorithm]\nlr = \"fast\"\n", {}, "algorithm.lr: expected a number, got string");
  checkFails("[algorithm]\nname = 3\n", {}, "algorithm.name: expected a string, got integer");
  checkFails("[data]\nheader = 1\n", {}, "data.header: expected a boolean, got integer");
  checkFails("[model]\nhidden = 128\n", {}, "model.hidden: expected an array of integers, got integer");
  checkFails("[model]\nhidden = [64, \"x\"]\n", {}, "model.hidden[1]: expected an integer, got string");
  checkFails("[cluster]\nseeds = [1]\n", {}, "cluster.seeds[0]: expected a string, got integer");
  checkFails("[faults]\ncrash = [3]\n", {}, "faults.crash[0]: expected a table {node, round}, got integer");
  checkFails("", {"algorithm.rounds=ten"}, "algorithm.rounds: expected an integer, got string");
  checkFails("", {"compressor.unbiased=yes"}, "compressor.unbiased: expected a boolean, got string");
  // A value with a newline cannot smuggle in a second key.
  const std::string msg = errorOf("", {"algorithm.rounds=5\n[node]\nid = 3"});
  CHECK(has(msg, "algorithm.rounds: expected an integer, got string"));
}

TEST_CASE("out-of-range values and unknown names are named") {
  checkFails("[algorithm]\nlr = 0\n", {}, "algorithm.lr must be > 0");
  checkFails("[algorithm]\nlr = -0.1\n", {}, "algorithm.lr must be > 0 (got -0.1)");
  checkFails("[algorithm]\nlr = nan\n", {}, "algorithm.lr must be finite");
  checkFails("[algorithm]\neta = 1.5\n", {}, "algorithm.eta must be in (0,1]");
  checkFails("[faults]\ndrop = 1.0\n", {}, "faults.drop must be in [0,1)");
  checkFails("[cluster]\nnodes = 0\n", {}, "cluster.nodes must be in [1,1048576] (got 0)");
  checkFails("[cluster]\nnodes = -4\n", {}, "cluster.nodes must be in [1,1048576] (got -4)");
  checkFails("[cluster]\nnodes = 2000000\n", {}, "cluster.nodes must be in [1,1048576] (got 2000000)");  // not 2e+06
  checkFails("[cluster]\nnodes = 5000000000\n", {}, "cluster.nodes must be in [1,1048576] (got 5000000000)");
  checkFails("[node]\nid = -1\n", {}, "node.id must be >= 0");
  checkFails("[compressor]\nbits = 0\n", {}, "compressor.bits must be in [1,16]");
  checkFails("[model]\nhidden = [64, 0]\n", {}, "model.hidden[1] must be >= 1");
  checkFails("", {"algorithm.name=chocco"}, "algorithm.name must be one of dpsgd");
  checkFails("", {"algorithm.name=chocco"}, "(did you mean 'choco'?)");
  checkFails("", {"compressor.name=topkk"}, "compressor.name must be one of");
  checkFails("", {"compressor.name=topkk"}, "did you mean 'topk'?");
  checkFails("", {"cluster.topology=hypercube"}, "cluster.topology: unknown kind 'hypercube'");
  checkFails("", {"cluster.topology=edge_list"}, "cluster.edges");
  checkFails("", {"cluster.weights=metro"}, "cluster.weights: unknown rule 'metro' (one of metropolis, mh");
  checkFails("", {"data.partition=sorted"}, "data.partition must be one of");
}

TEST_CASE("rules that relate several keys") {
  checkFails("[faults]\ncrash = [{node = 8, round = 5}]\n", {}, "faults.crash[0].node: node 8 is not alive at round 5");
  checkFails("[faults]\njoin = [{node = 3, round = 5}]\n", {}, "faults.join[0].node: node 3 is already alive");
  // A crashed node may come back (a restart: new incarnation, fresh state), and new ids may join.
  CHECK(errorOf("[faults]\ncrash = [{node = 3, round = 5}]\njoin = [{node = 3, round = 9}, {node = 8, round = 1}]\n").empty());
  checkFails("[faults]\ncrash = [{node = 3, round = 5}, {node = 3, round = 7}]\n", {}, "faults.crash[1].node: node 3 is not alive");
  checkFails("[faults]\njoin = [{node = 1, round = 100}]\n", {}, "faults.join[0].round must be < algorithm.rounds (100)");
  CHECK(errorOf("[faults]\ncrash = [{node = 7, round = 99}]\n").empty());
  checkFails("", {"algorithm.name=choco", "faults.drop=0.1"}, "faults.drop applies only to stateless algorithms");
  CHECK(errorOf("", {"algorithm.name=deepsqueeze", "faults.drop=0.1"}).empty());
  checkFails("", {"algorithm.name=lead", "algorithm.final_consensus_rounds=10"},
             "algorithm.final_consensus_rounds applies to dpsgd, deepsqueeze, choco and lsgd, not algorithm.name = 'lead'");
  checkFails("", {"algorithm.final_consensus_rounds=100"}, "algorithm.final_consensus_rounds must be below algorithm.rounds (100) (got 100)");
  CHECK(errorOf("", {"algorithm.name=choco", "algorithm.final_consensus_rounds=99"}).empty());
  // An unknown algorithm is reported once, not again by the drop rule.
  CHECK_FALSE(has(errorOf("", {"algorithm.name=chocco", "faults.drop=0.1"}), "stateless"));
  checkFails("", {"algorithm.lr_schedule=step"}, "algorithm.lr_decay_every must be >= 1");
  checkFails("", {"algorithm.local_schedule=adaptive", "algorithm.local_steps=4"}, "algorithm.local_steps_max");
  checkFails("", {"model.kind=mlp", "model.hidden=[]"}, "model.hidden");
  checkFails("", {"security.enable=true"}, "security.keys_dir is required");
  // The trainer bridge (docs/trainer.md): model mode mixes the trainer's model, gradient mode steps itself.
  checkFails("", {"trainer.enable=true", "algorithm.name=lead"},
             "trainer.mode = 'model' works with dpsgd, deepsqueeze, choco, not algorithm.name = 'lead'");
  CHECK(errorOf("", {"trainer.enable=true", "trainer.mode=gradient", "algorithm.name=lead"}).empty());
  CHECK(errorOf("", {"trainer.enable=false", "algorithm.name=lead"}).empty());
  checkFails("", {"trainer.enable=true", "trainer.mode=gradient", "algorithm.local_steps=2"},
             "algorithm.local_steps must be 1 with a fixed schedule when trainer.mode = 'gradient'");
  CHECK(errorOf("", {"trainer.enable=true", "algorithm.local_steps=2"}).empty());
  checkFails("", {"trainer.mode=gradients"}, "trainer.mode");
  // The automatic step needs a curvature bound (linear models) and the data in the daemon's hands.
  checkFails("", {"algorithm.lr_auto=true", "model.kind=mlp"},
             "algorithm.lr_auto needs model.kind = 'logistic', 'softmax' or 'least_squares' (no smoothness bound is known for 'mlp')");
  for (const char* kind : {"logistic", "softmax", "least_squares"})
    CHECK(errorOf("", {"algorithm.lr_auto=true", std::string("model.kind=") + kind}).empty());
  checkFails("", {"algorithm.lr_auto=true", "trainer.enable=true"}, "algorithm.lr_auto cannot be used with trainer.enable");
  checkFails("", {"algorithm.lr_auto=yes"}, "algorithm.lr_auto");
  checkFails("", {"trainer.idle_timeout_ms=10"}, "trainer.idle_timeout_ms");
  // Codistillation distills the daemon's own softmax output on a minibatch (algorithms/codistill.h).
  checkFails("", {"algorithm.name=codistill", "model.kind=logistic"},
             "algorithm.name = 'codistill' needs model.kind = 'softmax' or 'mlp' (a softmax output to distill), not 'logistic'");
  CHECK(errorOf("", {"algorithm.name=codistill", "model.kind=softmax"}).empty());
  checkFails("", {"algorithm.name=codistill", "model.kind=softmax", "algorithm.estimator=lsvrg"},
             "algorithm.name = 'codistill' needs algorithm.estimator = 'sgd'");
  checkFails("", {"algorithm.name=codistill", "model.kind=softmax", "trainer.enable=true", "trainer.mode=gradient"},
             "algorithm.name = 'codistill' cannot be used with trainer.enable");
  checkFails("", {"algorithm.distill_weight=-1"}, "algorithm.distill_weight must be >= 0");
  checkFails("", {"algorithm.distill_period=0"}, "algorithm.distill_period must be >= 1");
}

TEST_CASE("nids and ed refuse a compressor they would silently ignore") {
  checkFails("", {"algorithm.name=nids", "compressor.name=topk"}, "compressor.name must be fp32 when algorithm.name = 'nids'");
  checkFails("", {"algorithm.name=ed", "compressor.name=lead"}, "compressor.name must be fp32 when algorithm.name = 'ed'");
  CHECK(errorOf("", {"algorithm.name=nids", "compressor.name=fp32"}).empty());
  CHECK(errorOf("", {"algorithm.name=ed", "compressor.name=identity"}).empty());
}

TEST_CASE("cluster.weights takes the same names as gossipd topo - and library messages name the key") {
  CHECK(errorOf("", {"cluster.weights=mh"}).empty());
  CHECK(errorOf("", {"cluster.weights=max-degree"}).empty());
  checkFails("", {"cluster.weights=mhh"}, "cluster.weights: unknown rule 'mhh'");
  CHECK(withConfigKey("degree: nodes * degree must be even") == "cluster.degree: nodes * degree must be even");
  CHECK(withConfigKey("weights: x") == "cluster.weights: x");
  CHECK(withConfigKey("nodes: must be >= 1") == "cluster.nodes: must be >= 1");
  CHECK(withConfigKey("data.train: x") == "data.train: x");
}

TEST_CASE("faults.delay_ms was never applied and is no longer a key") {
  checkFails("[faults]\ndelay_ms = 15\n", {}, "unknown key 'faults.delay_ms'");
  checkFails("", {"faults.delay_ms=5"}, "unknown key 'faults.delay_ms'");
}

TEST_CASE("malformed --set and several problems at once") {
  checkFails("", {"algorithm.lr"}, "--set expects section.key=value (got 'algorithm.lr')");
  checkFails("", {"lr=0.1"}, "--set expects section.key=value");
  checkFails("", {"algorithm.=0.1"}, "--set expects section.key=value");
  checkFails("", {".lr=0.1"}, "--set expects section.key=value");
  // Every problem is reported, joined on one line.
  const std::string msg = errorOf("[algorithm]\nlrr = 1\nrounds = \"x\"\n", {"cluster.nodes=0", "faults.drop=2"});
  CAPTURE(msg);
  CHECK(has(msg, "algorithm.lrr"));
  CHECK(has(msg, "algorithm.rounds"));
  CHECK(has(msg, "cluster.nodes"));
  CHECK(has(msg, "faults.drop"));
  CHECK(std::count(msg.begin(), msg.end(), ';') >= 3);
  CHECK_FALSE(has(msg, "\n"));
}

}  // namespace
}  // namespace gossip::daemon
