// Config layer: defaults, a full file, --set overrides, toJson round trip, the shipped example, the
// docs' key list, and the helpers other modules use (lrSchedule, topology conversions).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "algorithms/algorithm.h"
#include "daemon/log/log.h"
#include "tests/unit/daemon/config_test_util.h"

namespace gossip::daemon {
namespace {

using namespace testutil;
namespace fs = std::filesystem;

TEST_CASE("defaults load without a file and validate cleanly") {
  const Config c = loadConfig(std::nullopt, {});
  CHECK(validate(Config{}).empty());
  CHECK(c.node.id == 0);
  CHECK(c.node.listen == "tcp://127.0.0.1:0");
  CHECK(c.node.http == "127.0.0.1:0");
  CHECK(c.node.data_dir == "./gossipd-data");
  CHECK(c.cluster.nodes == 8);
  CHECK(c.cluster.topology == "ring");
  CHECK(c.cluster.degree == 4);
  CHECK(c.cluster.weights == "metropolis");
  CHECK(c.cluster.seeds.empty());
  CHECK(c.algorithm.name == "dpsgd");
  CHECK(c.algorithm.lr == 0.1);
  CHECK(c.algorithm.rounds == 100);
  CHECK(c.algorithm.round_timeout_ms == 2000);
  CHECK(c.algorithm.estimator == "sgd");
  CHECK(c.algorithm.batch == 32);
  CHECK(c.compressor.name == "fp32");
  CHECK(c.compressor.ratio == 0.01);
  CHECK(c.compressor.bits == 2);
  CHECK(c.compressor.levels == 16);
  CHECK(c.compressor.inf_norm);
  CHECK(c.compressor_beta == 1.0);
  CHECK(c.model.kind == "softmax");
  CHECK(c.model.hidden == std::vector<std::uint32_t>{128});
  CHECK(c.data.format == "idx");
  CHECK(c.data.synthetic_samples == 50);
  CHECK(c.data.synthetic_dim == 40);
  CHECK(c.faults.drop == 0.0);
  CHECK(c.faults.crash.empty());
  CHECK(c.sim.eval_every == 10);
  CHECK(c.sim.threads == 1);
  CHECK_FALSE(c.security.enable);
}

TEST_CASE("a full file sets every section's fields") {
  TempFile f(kFullFile);
  const Config c = loadConfig(f.arg(), {});
  CHECK(c.node.id == 3);
  CHECK(c.node.listen == "tcp://10.0.0.3:7000");
  CHECK(c.node.advertise == "tcp://node-3.example:7000");
  CHECK(c.node.http == "0.0.0.0:8080");
  CHECK(c.node.data_dir == "/var/lib/gossipd");
  CHECK(c.cluster.nodes == 16);
  CHECK(c.cluster.topology == "random_regular");
  CHECK(c.cluster.degree == 3);
  CHECK(c.cluster.extra == 1);
  CHECK(c.cluster.rows == 4);
  CHECK(c.cluster.edge_prob == 0.25);
  CHECK(c.cluster.weights == "maxdegree");
  CHECK(c.cluster.seed == 42);
  CHECK(c.cluster.seeds == std::vector<std::string>{"tcp://10.0.0.1:7000", "tcp://10.0.0.2:7000"});
  CHECK(c.algorithm.name == "choco");
  CHECK(c.algorithm.lr == 0.05);
  CHECK(c.algorithm.lr_schedule == "step");
  CHECK(c.algorithm.lr_decay == 0.5);
  CHECK(c.algorithm.lr_decay_every == 20);
  CHECK(c.algorithm.eta == 0.2);
  CHECK(c.algorithm.gamma == 0.4);
  CHECK(c.algorithm.alpha == 0.25);
  CHECK(c.algorithm.local_steps == 2);
  CHECK(c.algorithm.local_schedule == "adaptive");
  CHECK(c.algorithm.local_steps_max == 8);
  CHECK(c.algorithm.rounds == 300);
  CHECK(c.algorithm.round_timeout_ms == 500);
  CHECK(c.algorithm.estimator == "saga");
  CHECK(c.algorithm.batch == 64);
  CHECK(c.algorithm.lsvrg_p == 0.01);
  CHECK(c.compressor.name == "topk");
  CHECK(c.compressor.ratio == 0.02);
  CHECK(c.compressor.k == 10);
  CHECK(c.compressor.bits == 4);
  CHECK(c.compressor.levels == 8);
  CHECK(c.compressor.block == 256);
  CHECK(c.compressor.unbiased);
  CHECK_FALSE(c.compressor.inf_norm);
  CHECK(c.compressor_beta == 0.9);
  CHECK(c.model.kind == "mlp");
  CHECK(c.model.hidden == std::vector<std::uint32_t>{64, 32});
  CHECK(c.model.l1 == 0.001);
  CHECK(c.model.l2 == 0.0001);
  CHECK(c.data.format == "csv");
  CHECK(c.data.train == "train.csv");
  CHECK(c.data.test == "test.csv");
  CHECK(c.data.train_labels == "tl");
  CHECK(c.data.test_labels == "sl");
  CHECK(c.data.label_column == -1);
  CHECK(c.data.header);
  CHECK(c.data.regression);
  CHECK(c.data.scaling == "standardize");
  CHECK(c.data.partition == "dirichlet");
  CHECK(c.data.dirichlet_alpha == 0.1);
  CHECK(c.data.max_train == 1000);
  CHECK(c.data.max_test == 200);
  CHECK(c.data.synthetic_samples == 10);
  CHECK(c.data.synthetic_dim == 5);
  CHECK(c.data.synthetic_heterogeneity == 0.5);
  CHECK(c.data.seed == 7);
  CHECK(c.faults.crash == std::vector<FaultEvent>{{2, 50}});
  CHECK(c.faults.join == std::vector<FaultEvent>{{2, 120}, {16, 10}});
  CHECK(c.sim.eval_every == 5);
  CHECK(c.sim.eval_test_max == 500);
  CHECK(c.sim.threads == 2);
  CHECK(c.security.enable);
  CHECK(c.security.keys_dir == "/etc/gossipd/keys");
}

TEST_CASE("--set overrides file values in order and takes bare strings - numbers - booleans - arrays") {
  TempFile f(kFullFile);
  const Config c = loadConfig(f.arg(), {
                                           "algorithm.name=deepsqueeze",  // bare string
                                           "algorithm.lr=0.5",
                                           "algorithm.lr=0.25",  // the later override wins
                                           "cluster.nodes = 32",  // spaces around '=' are fine
                                           "compressor.unbiased=false",
                                           "model.hidden=[10, 20, 30]",
                                           "node.listen=tcp://192.168.1.5:9000",
                                           "node.http=\"127.0.0.1:9090\"",  // quoted string
                                           "data.train=2024-01-01",  // parses as a TOML date; still a file name
                                           "cluster.seeds=tcp://a:1, tcp://b:2",  // bare comma list
                                           "faults.crash=[{node = 1, round = 7}, {node = 4, round = 9}]",
                                           "faults.join=[]",
                                           "algorithm.lr_decay=1",  // integer text for a float key
                                           "data.label_column=3",
                                       });
  CHECK(c.algorithm.name == "deepsqueeze");
  CHECK(c.algorithm.lr == 0.25);
  CHECK(c.cluster.nodes == 32);
  CHECK_FALSE(c.compressor.unbiased);
  CHECK(c.model.hidden == std::vector<std::uint32_t>{10, 20, 30});
  CHECK(c.node.listen == "tcp://192.168.1.5:9000");
  CHECK(c.node.http == "127.0.0.1:9090");
  CHECK(c.data.train == "2024-01-01");
  CHECK(c.cluster.seeds == std::vector<std::string>{"tcp://a:1", "tcp://b:2"});
  CHECK(c.faults.crash == std::vector<FaultEvent>{{1, 7}, {4, 9}});
  CHECK(c.faults.join.empty());
  CHECK(c.algorithm.lr_decay == 1.0);
  CHECK(c.data.label_column == 3);
  // Keys not overridden keep the file's values.
  CHECK(c.algorithm.rounds == 300);
  CHECK(c.compressor.name == "topk");

  const Config d = loadConfig(std::nullopt, {"cluster.seeds=[\"tcp://x:1\"]", "data.test=", "security.enable=true",
                                             "security.keys_dir=keys"});
  CHECK(d.cluster.seeds == std::vector<std::string>{"tcp://x:1"});
  CHECK(d.data.test.empty());
  CHECK(d.security.enable);
}

// Writes a JSON value back as --set text (JSON scalars and arrays of scalars are valid TOML values;
// tables are written as TOML inline tables).
std::string asToml(const nlohmann::json& v) {
  if (v.is_object()) {
    std::string out = "{";
    for (auto it = v.begin(); it != v.end(); ++it) out += (out.size() > 1 ? ", " : "") + it.key() + " = " + asToml(*it);
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (const auto& e : v) out += (out.size() > 1 ? ", " : "") + asToml(e);
    return out + "]";
  }
  return v.dump();
}

TEST_CASE("toJson reports every key and round-trips through --set") {
  TempFile f(kFullFile);
  const Config c = loadConfig(f.arg(), {"algorithm.lr=1e-06", "data.train=a \"quoted\" name"});
  const nlohmann::json j = toJson(c);
  // Spot checks against the struct, independent of the schema table.
  CHECK(j["algorithm"]["lr"].get<double>() == 1e-6);
  CHECK(j["algorithm"]["name"] == "choco");
  CHECK(j["compressor"]["name"] == "topk");
  CHECK(j["compressor"]["beta"].get<double>() == 0.9);
  CHECK(j["cluster"]["nodes"] == 16);
  CHECK(j["cluster"]["seeds"] == nlohmann::json::array({"tcp://10.0.0.1:7000", "tcp://10.0.0.2:7000"}));
  CHECK(j["model"]["hidden"] == nlohmann::json::array({64, 32}));
  CHECK(j["faults"]["crash"] == nlohmann::json::parse(R"([{"node": 2, "round": 50}])"));
  CHECK(j["data"]["label_column"] == -1);
  CHECK(j["data"]["train"] == "a \"quoted\" name");
  CHECK(j["monitor"]["eval_every"] == 50);

  // Rebuild the config from its JSON alone, key by key, and compare.
  std::vector<std::string> sets;
  for (auto sec = j.begin(); sec != j.end(); ++sec)
    for (auto key = sec->begin(); key != sec->end(); ++key) sets.push_back(sec.key() + "." + key.key() + "=" + asToml(*key));
  const Config back = loadConfig(std::nullopt, sets);
  CHECK(toJson(back) == j);
  CHECK(back.faults.join == c.faults.join);
  CHECK(back.model.hidden == c.model.hidden);
  CHECK(back.algorithm.lr == c.algorithm.lr);
}

TEST_CASE("the shipped example loads and is the documented setup") {
  const Config c = loadConfig((repoRoot() / "examples" / "sim_ring.toml").string(), {});
  CHECK(c.cluster.nodes == 8);
  CHECK(topologyParams(c.cluster).kind == topology::Kind::Ring);
  CHECK(c.algorithm.name == "prox_lead");
  CHECK(c.compressor.name == "lead");
  CHECK(c.compressor.bits == 2);
  CHECK(c.model.kind == "logistic");
  CHECK(c.model.l1 > 0);
  CHECK(c.data.format == "synthetic");
}

TEST_CASE("docs/config.md documents exactly the keys toJson reports") {
  std::ifstream in(repoRoot() / "docs" / "config.md");
  REQUIRE(in.good());
  // Table rows look like "| `section.key` | default | meaning |".
  std::set<std::string> documented;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const auto end = line.find('`', 3);
    const std::string key = line.substr(3, end - 3);
    if (key.find('.') != std::string::npos) documented.insert(key);
  }
  std::set<std::string> actual;
  const nlohmann::json j = toJson(Config{});
  for (auto sec = j.begin(); sec != j.end(); ++sec)
    for (auto key = sec->begin(); key != sec->end(); ++key) actual.insert(sec.key() + "." + key.key());
  CHECK(documented == actual);
}

TEST_CASE("node.log_level - node.log_levels and node.log_format: defaults - good values - bad values") {
  const Config d = parseConfig("", "test.toml", {});
  CHECK(d.node.log_level == "info");
  CHECK(d.node.log_levels.empty());
  CHECK(d.node.log_format == "text");
  // The config's lists and the logging module's parsers agree, name for name.
  for (auto name : kLogLevels) CHECK_MESSAGE(logging::parseLevel(name), name);
  CHECK(kLogLevels.size() == logging::kLevelNames.size());
  for (auto name : kLogFormats) CHECK_NOTHROW((void)logging::parseFormat(name));

  const Config f = parseConfig("[node]\nlog_level = \"debug\"\nlog_levels = \"membership=trace, engine=warn\"\n"
                               "log_format = \"json\"\n",
                               "test.toml", {});
  CHECK(f.node.log_level == "debug");
  CHECK(f.node.log_levels == "membership=trace, engine=warn");
  CHECK(f.node.log_format == "json");
  const Config s = parseConfig("", "test.toml", {"node.log_level=off", "node.log_levels=http=error,bridge=debug"});
  CHECK(s.node.log_level == "off");
  CHECK(s.node.log_levels == "http=error,bridge=debug");

  checkFails("[node]\nlog_level = \"verbose\"\n", {}, "node.log_level must be one of info, trace, debug, warn, error, off");
  checkFails("", {"node.log_level=warning"}, "(got 'warning')");
  checkFails("[node]\nlog_level = 3\n", {}, "node.log_level: expected a string");
  checkFails("", {"node.log_format=xml"}, "node.log_format must be one of text, json (got 'xml')");
  checkFails("", {"node.log_levels=membrship=debug"}, "node.log_levels: unknown logger 'membrship' (loggers: node,");
  checkFails("", {"node.log_levels=membership=loud"}, "node.log_levels: 'membership=loud': the level must be one of");
  checkFails("", {"node.log_levels=membership"}, "node.log_levels: 'membership' is not logger=level");
  checkFails("", {"node.log_levels=engine=warn,,http=debug"}, "node.log_levels: '' is not logger=level");
}

TEST_CASE("lrSchedule follows the documented closed forms") {
  AlgorithmConfig a;
  a.lr = 0.8;
  CHECK(lrSchedule(a).value(0) == 0.8);
  CHECK(lrSchedule(a).value(1000) == 0.8);
  a.lr_schedule = "step";
  a.lr_decay = 0.5;
  a.lr_decay_every = 10;
  CHECK(lrSchedule(a).value(9) == doctest::Approx(0.8));
  CHECK(lrSchedule(a).value(10) == doctest::Approx(0.4));
  CHECK(lrSchedule(a).value(25) == doctest::Approx(0.2));
  a.lr_schedule = "inverse";
  a.lr_decay = 0.1;
  CHECK(lrSchedule(a).value(30) == doctest::Approx(0.2));  // 0.8 / (1 + 3)
  a.lr_schedule = "cosine";
  a.rounds = 100;
  CHECK(lrSchedule(a).value(0) == doctest::Approx(0.8));
  CHECK(lrSchedule(a).value(50) == doctest::Approx(0.4));
  CHECK(lrSchedule(a).value(100) == doctest::Approx(0.0));
  CHECK(lrSchedule(a).value(25) == doctest::Approx(0.4 * (1 + std::sqrt(0.5))));
}

TEST_CASE("topology and weight conversions accept every name the config accepts") {
  ClusterConfig cl;
  cl.topology = "torus";
  cl.rows = 3;
  cl.seed = 9;
  const auto p = topologyParams(cl);
  CHECK(p.kind == topology::Kind::Torus);
  CHECK(p.rows == 3);
  CHECK(p.seed == 9);
  cl.weights = "metropolis";
  CHECK(weightRule(cl) == topology::WeightRule::Metropolis);
  cl.weights = "maxdegree";
  CHECK(weightRule(cl) == topology::WeightRule::MaxDegree);
  cl.weights = "uniform";
  CHECK(weightRule(cl) == topology::WeightRule::Uniform);
  for (auto name : kWeightRules) {
    cl.weights = std::string(name);
    CHECK_NOTHROW(weightRule(cl));
  }
}

}  // namespace
}  // namespace gossip::daemon

// The config's name lists are a second copy of the algorithm factory's knowledge (the schema needs them
// at compile time); this keeps the two from drifting apart.
TEST_CASE("config algorithm names and the stateless list match the algorithm factory") {
  const auto names = gossip::algo::algorithmNames();
  CHECK(names.size() == gossip::daemon::kAlgorithmNames.size());
  auto comp = gossip::compress::makeCompressor({.name = "fp32"});
  for (auto name : gossip::daemon::kAlgorithmNames) {
    INFO(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
    gossip::algo::AlgorithmParams p;
    p.name = std::string(name);
    const bool stateless = gossip::algo::makeAlgorithm(p, *comp, 0, gossip::training::Vec::Zero(2))->stateless();
    const bool listed = std::find(gossip::daemon::kStatelessAlgorithms.begin(), gossip::daemon::kStatelessAlgorithms.end(), name) !=
                        gossip::daemon::kStatelessAlgorithms.end();
    CHECK(stateless == listed);
  }
}

TEST_CASE("algorithmParams: cltk's delay and lsgd's global epoch from the initial graph's diameter") {
  using gossip::daemon::algorithmParams;
  using gossip::daemon::loadConfig;
  // A 16-node ring has diameter 8.
  const auto cltk = algorithmParams(loadConfig(std::nullopt, {"cluster.nodes=16", "cluster.topology=ring",
                                                              "algorithm.name=choco", "compressor.name=cltk"}));
  CHECK(cltk.cltk_delay == 8);
  const auto ok = algorithmParams(loadConfig(std::nullopt, {"cluster.nodes=16", "cluster.topology=ring", "algorithm.name=lsgd",
                                                            "algorithm.leader_global_pull=0.5", "algorithm.leader_global_period=8"}));
  CHECK(ok.leader_global_pull == 0.5);
  CHECK(ok.leader_global_period == 8);
  try {
    (void)algorithmParams(loadConfig(std::nullopt, {"cluster.nodes=16", "cluster.topology=ring", "algorithm.name=lsgd",
                                                    "algorithm.leader_global_pull=0.5", "algorithm.leader_global_period=7"}));
    FAIL("an epoch shorter than the diameter was accepted");
  } catch (const gossip::ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "algorithm.leader_global_period must be at least the graph's diameter (8) so that every node elects the same "
          "global leader (got 7)");
  }
  // Off (the default pull 0): any epoch length.
  CHECK_NOTHROW(algorithmParams(loadConfig(std::nullopt, {"cluster.nodes=16", "algorithm.name=lsgd", "algorithm.leader_global_period=1"})));
}

TEST_CASE("algorithmParams: lsgd's pull step is at most the graph's smallest self weight") {
  using gossip::daemon::algorithmParams;
  using gossip::daemon::loadConfig;
  // A 16-node ring with Metropolis weights: every self weight is 1/3; lr 0.05.
  const std::vector<std::string> ring{"cluster.nodes=16", "cluster.topology=ring", "algorithm.name=lsgd", "algorithm.lr=0.05"};
  auto with = [&](std::string extra) {
    auto s = ring;
    s.push_back(std::move(extra));
    return loadConfig(std::nullopt, s);
  };
  CHECK_NOTHROW(algorithmParams(with("algorithm.leader_pull=6.6")));  // 0.33 <= 1/3
  try {
    (void)algorithmParams(with("algorithm.leader_pull=8"));
    FAIL("a pull step above the self weight was accepted");
  } catch (const gossip::ConfigError& e) {
    CHECK(std::string(e.what()) == "algorithm.leader_pull: the pull step lr * leader_pull (0.4) must be at most the graph's "
                                   "smallest self weight (0.3333), or a pulled node overshoots its leader");
  }
  // Not checked where the bound does not apply: on DeepSqueeze (the pull acts on sketches) and with lr_auto.
  auto ds = with("algorithm.leader_base=deepsqueeze");
  ds.algorithm.leader_pull = 8;
  CHECK_NOTHROW(algorithmParams(ds));
  auto automatic = with("algorithm.lr_auto=true");
  automatic.algorithm.leader_pull = 8;
  CHECK_NOTHROW(algorithmParams(automatic));
}
