#pragma once
// Helpers shared by the config tests: temp files, error capture, and a full example file that sets
// every key of every section to a non-default value.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.h"
#include "daemon/config/config.h"

namespace gossip::daemon::testutil {

namespace fs = std::filesystem;

// Repository root, from this file's absolute path (CMake compiles sources by absolute path).
// From CMake: __FILE__ is relative to the build directory under ccache's CCACHE_BASEDIR, and ctest runs the
// test from another directory.
inline fs::path repoRoot() {
#ifdef GOSSIP_SOURCE_DIR
  return fs::path(GOSSIP_SOURCE_DIR);
#else
  return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
#endif
}

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
    fs::remove(path.parent_path(), ec);  // only succeeds once the directory is empty
  }
  std::optional<std::string> arg() const { return path.string(); }
};

// The ConfigError message of loading `text` with `sets`, or "" if it loaded.
inline std::string errorOf(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    (void)parseConfig(text, "test.toml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

inline bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

inline void checkFails(const std::string& text, const std::vector<std::string>& sets, const std::string& expected) {
  const std::string msg = errorOf(text, sets);
  CAPTURE(msg);
  CHECK(has(msg, expected));
  CHECK_FALSE(has(msg, "\n"));
}

inline constexpr const char* kFullFile = R"(
[node]
id = 3
listen = "tcp://10.0.0.3:7000"
advertise = "tcp://node-3.example:7000"
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
crash = [{node = 2, round = 50}]

[[faults.join]]
node = 2
round = 120

[[faults.join]]
node = 16
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


}  // namespace gossip::daemon::testutil
