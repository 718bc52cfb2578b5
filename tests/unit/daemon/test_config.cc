// Config layer: defaults, a full file, --set overrides, every class of user error (each must be a
// one-line ConfigError naming the key or file), toJson round trip, the shipped example and the docs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "daemon/config.h"

namespace gossip::daemon {
namespace {

namespace fs = std::filesystem;

// Repository root, from this file's absolute path (CMake compiles sources by absolute path).
fs::path repoRoot() { return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path(); }

// A TOML file in a per-process temp directory, removed at scope exit.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text, const std::string& name = "config.toml") {
    const fs::path dir = fs::temp_directory_path() / ("gossip_test_config_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = dir / name;
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::optional<std::string> arg() const { return path.string(); }
};

// The ConfigError message of loading `text` with `sets`, or "" if it loaded.
std::string errorOf(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    (void)parseConfig(text, "test.toml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

void checkFails(const std::string& text, const std::vector<std::string>& sets, const std::string& expected) {
  const std::string msg = errorOf(text, sets);
  CAPTURE(msg);
  CHECK(has(msg, expected));
  CHECK_FALSE(has(msg, "\n"));
}

const char* kFullFile = R"(
[node]
id = 3
listen = "tcp://10.0.0.3:7000"
http = "0.0.0.0:8080"
data_dir = "/var/lib/gossipd"

[cluster]
nodes = 16
topology = "random_regular"
degree = 3
extra = 1
rows = 4
edge_prob = 0.25
edges = ""
weights = "maxdegree"
seed = 42
seeds = ["tcp://10.0.0.1:7000", "tcp://10.0.0.2:7000"]

[algorithm]
name = "choco"
lr = 0.05
lr_schedule = "step"
lr_decay = 0.5
lr_decay_every = 20
eta = 0.2
gamma = 0.4
alpha = 0.25
local_steps = 2
local_schedule = "adaptive"
local_steps_max = 8
rounds = 300
round_timeout_ms = 500
estimator = "saga"
batch = 64
lsvrg_p = 0.01

[compressor]
name = "topk"
ratio = 0.02
k = 10
bits = 4
levels = 8
block = 256
unbiased = true
inf_norm = false
beta = 0.9

[model]
kind = "mlp"
hidden = [64, 32]
l1 = 0.001
l2 = 0.0001

[data]
format = "csv"
train = "train.csv"
test = "test.csv"
train_labels = "tl"
test_labels = "sl"
label_column = -1
header = true
regression = true
scaling = "standardize"
partition = "dirichlet"
dirichlet_alpha = 0.1
max_train = 1000
max_test = 200
synthetic_samples = 10
synthetic_dim = 5
synthetic_heterogeneity = 0.5
seed = 7

[faults]
drop = 0.0
delay_ms = 15
crash = [{node = 2, round = 50}]

[[faults.join]]
node = 2
round = 120

[[faults.join]]
node = 15
round = 10

[sim]
eval_every = 5
eval_test_max = 500
threads = 2

[monitor]

[security]
enable = true
keys_dir = "/etc/gossipd/keys"
)";

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
  CHECK(c.faults.delay_ms == 15);
  CHECK(c.faults.crash == std::vector<FaultEvent>{{2, 50}});
  CHECK(c.faults.join == std::vector<FaultEvent>{{2, 120}, {15, 10}});
  CHECK(c.sim.eval_every == 5);
  CHECK(c.sim.eval_test_max == 500);
  CHECK(c.sim.threads == 2);
  CHECK(c.security.enable);
  CHECK(c.security.keys_dir == "/etc/gossipd/keys");
}

TEST_CASE("--set overrides file values in order and takes bare strings, numbers, booleans, arrays") {
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

  const Config d = loadConfig(std::nullopt, {"cluster.seeds=[\"x:1\"]", "data.test=", "security.enable=true",
                                             "security.keys_dir=keys"});
  CHECK(d.cluster.seeds == std::vector<std::string>{"x:1"});
  CHECK(d.data.test.empty());
  CHECK(d.security.enable);
}

TEST_CASE("missing, unreadable and syntactically broken files name the file") {
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

TEST_CASE("unknown sections and keys are named, with a suggestion when one is close") {
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
  checkFails("[cluster]\nnodes = 0\n", {}, "cluster.nodes must be >= 1");
  checkFails("[cluster]\nnodes = -4\n", {}, "cluster.nodes must be >= 1 (got -4)");
  checkFails("[cluster]\nnodes = 5000000000\n", {}, "cluster.nodes must be <= 4294967295");
  checkFails("[node]\nid = -1\n", {}, "node.id must be >= 0");
  checkFails("[compressor]\nbits = 0\n", {}, "compressor.bits must be in [1,16]");
  checkFails("[model]\nhidden = [64, 0]\n", {}, "model.hidden[1] must be >= 1");
  checkFails("", {"algorithm.name=chocco"}, "algorithm.name must be one of dpsgd");
  checkFails("", {"algorithm.name=chocco"}, "(did you mean 'choco'?)");
  checkFails("", {"compressor.name=topkk"}, "compressor.name must be one of");
  checkFails("", {"compressor.name=topkk"}, "did you mean 'topk'?");
  checkFails("", {"cluster.topology=hypercube"}, "cluster.topology: unknown kind 'hypercube'");
  checkFails("", {"cluster.topology=edge_list"}, "cluster.edges");
  checkFails("", {"cluster.weights=metro"}, "cluster.weights must be one of");
  checkFails("", {"data.partition=sorted"}, "data.partition must be one of");
}

TEST_CASE("rules that relate several keys") {
  checkFails("[faults]\ncrash = [{node = 8, round = 5}]\n", {}, "faults.crash[0].node must be < cluster.nodes (8)");
  checkFails("[faults]\njoin = [{node = 1, round = 100}]\n", {}, "faults.join[0].round must be < algorithm.rounds (100)");
  CHECK(errorOf("[faults]\ncrash = [{node = 7, round = 99}]\n").empty());
  checkFails("", {"algorithm.name=choco", "faults.drop=0.1"}, "faults.drop applies only to stateless algorithms");
  CHECK(errorOf("", {"algorithm.name=deepsqueeze", "faults.drop=0.1"}).empty());
  // An unknown algorithm is reported once, not again by the drop rule.
  CHECK_FALSE(has(errorOf("", {"algorithm.name=chocco", "faults.drop=0.1"}), "stateless"));
  checkFails("", {"algorithm.lr_schedule=step"}, "algorithm.lr_decay_every must be >= 1");
  checkFails("", {"algorithm.local_schedule=adaptive", "algorithm.local_steps=4"}, "algorithm.local_steps_max");
  checkFails("", {"model.kind=mlp", "model.hidden=[]"}, "model.hidden");
  checkFails("", {"security.enable=true"}, "security.keys_dir is required");
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
  CHECK(j["monitor"] == nlohmann::json::object());

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

TEST_CASE("learningRate follows the documented closed forms") {
  AlgorithmConfig a;
  a.lr = 0.8;
  CHECK(learningRate(a, 0) == 0.8);
  CHECK(learningRate(a, 1000) == 0.8);
  a.lr_schedule = "step";
  a.lr_decay = 0.5;
  a.lr_decay_every = 10;
  CHECK(learningRate(a, 9) == doctest::Approx(0.8));
  CHECK(learningRate(a, 10) == doctest::Approx(0.4));
  CHECK(learningRate(a, 25) == doctest::Approx(0.2));
  a.lr_schedule = "inverse";
  a.lr_decay = 0.1;
  CHECK(learningRate(a, 30) == doctest::Approx(0.2));  // 0.8 / (1 + 3)
  a.lr_schedule = "cosine";
  a.rounds = 100;
  CHECK(learningRate(a, 0) == doctest::Approx(0.8));
  CHECK(learningRate(a, 50) == doctest::Approx(0.4));
  CHECK(learningRate(a, 100) == doctest::Approx(0.0));
  CHECK(learningRate(a, 25) == doctest::Approx(0.4 * (1 + std::sqrt(0.5))));
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
