#pragma once
// The configuration of one gossipd process (run, cluster and sim), parsed ONCE into typed structs.
//
// Sources, in order: built-in defaults, then a TOML file (optional), then each `--set section.key=value`
// override in command-line order. Every key of every section is overridable; the schema (which keys
// exist, their types, ranges and allowed names) lives in one table in config_schema.cc, so parsing,
// validation, --set, JSON output and docs/config.md cannot drift apart key by key.
//
// Failure contract (DESIGN.md §2): a missing file, a TOML syntax error, an unknown section or key, a
// value of the wrong type or out of range all end in ONE gossip::ConfigError whose single-line message
// names the file or the `section.key`. loadConfig() collects every problem it can find and joins them
// with "; ", so a user fixes a config in one pass. There are no silent defaults for keys that were
// given: a key is either applied or reported.
//
// Each module gets only its own sub-struct (STYLE.md §4): the compressor factory takes
// `config.compressor`, the topology takes topologyParams(config.cluster), and so on.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "algorithms/algorithm.h"
#include "compressors/compressor.h"
#include "core/types.h"
#include "topology/topology.h"
#include "training/schedule.h"

namespace gossip::daemon {

// Accepted names of the enumerated string keys. The first entry of each list is the default.
inline constexpr std::array<std::string_view, 9> kAlgorithmNames{"dpsgd", "choco",     "deepsqueeze",
                                                                 "nids",  "ed",        "lead",
                                                                 "prox_lead", "lsgd", "codistill"};
// Algorithms whose messages are stateless (a lost message only affects one round, ALGORITHMS.md §5.2).
inline constexpr std::array<std::string_view, 3> kStatelessAlgorithms{"dpsgd", "deepsqueeze", "lsgd"};
inline constexpr std::array<std::string_view, 4> kLrSchedules{"constant", "step", "inverse", "cosine"};
// The final consensus phase's message codec (algo::NodeSchedule::consensus_codec).
inline constexpr std::array<std::string_view, 3> kConsensusCodecs{"fp32", "fp16", "bf16"};
inline constexpr std::array<std::string_view, 2> kLocalSchedules{"fixed", "adaptive"};
inline constexpr std::array<std::string_view, 4> kEstimators{"sgd", "full", "lsvrg", "saga"};
// The methods lsgd's pull can be added to (algorithms/leader.h).
inline constexpr std::array<std::string_view, 2> kLeaderBases{"dpsgd", "deepsqueeze"};
// Canonical weight-rule names; cluster.weights is parsed by topology::parseWeightRule, the same parser as
// `gossipd topo --weights`, which also accepts the aliases mh, metropolis-hastings and max-degree.
inline constexpr std::array<std::string_view, 3> kWeightRules{"metropolis", "maxdegree", "uniform"};
inline constexpr std::array<std::string_view, 4> kModelKinds{"softmax", "logistic", "mlp", "least_squares"};
inline constexpr std::array<std::string_view, 4> kDataFormats{"idx", "libsvm", "csv", "synthetic"};
inline constexpr std::array<std::string_view, 3> kScalings{"none", "minmax", "standardize"};
inline constexpr std::array<std::string_view, 3> kPartitions{"iid", "label_sorted", "dirichlet"};
// node.log_level and node.log_format (daemon/log/log.h parses them; the test checks the lists agree).
inline constexpr std::array<std::string_view, 6> kLogLevels{"info", "trace", "debug", "warn", "error", "off"};
inline constexpr std::array<std::string_view, 2> kLogFormats{"text", "json"};
inline constexpr std::array<std::string_view, 2> kTrainerModes{"model", "gradient"};
// Methods that can mix a model the trainer stepped itself (trainer.mode = "model", docs/trainer.md): the
// exact methods need the gradient inside their update.
inline constexpr std::array<std::string_view, 3> kModelModeAlgorithms{"dpsgd", "deepsqueeze", "choco"};

// Node ids (and cluster.nodes) are capped. A daemon's cluster is at most a membership table
// (membership/membership.h, kMaxMembers): `gossipd run` refuses more. `gossipd sim` holds one state per
// node and no membership, so it goes to 2^20 (issue 29: 100,000 simulated nodes; 2^20 ids is a typo guard,
// the memory estimate, daemon/config/memory_estimate.h, checks what fits).
inline constexpr std::uint32_t kMaxNodes = 65536;
inline constexpr std::uint32_t kMaxSimNodes = 1u << 20;

struct NodeConfig {
  PeerId id = 0;
  std::string listen = "tcp://127.0.0.1:0";  // ZeroMQ endpoint; port 0 = ephemeral
  std::string advertise;                     // what other nodes connect to; "" = the bound endpoint
  std::string http = "127.0.0.1:0";          // host:port of the HTTP server; "" = no HTTP server
  std::string data_dir = "./gossipd-data";   // checkpoints and keys of this node
  std::uint64_t checkpoint_every = 100;      // run: rounds between checkpoints (0 = only at exit)
  std::uint32_t keep_checkpoints = 3;        // run: newest checkpoints kept
  std::string log_level = "info";            // run: every logger's level (daemon/log/log.h)
  std::string log_levels;                    // run: per-logger overrides, "membership=debug,engine=warn"
  std::string log_format = "text";           // run: text | json (JSON lines)
};

struct ClusterConfig {
  std::string name = "gossipd";     // run: members of one run share it (daemon/node/cluster_identity.h)
  std::uint32_t nodes = 8;          // sim/cluster: number of nodes
  std::string topology = "ring";    // any name topology::parseKind accepts
  std::uint32_t degree = 4;         // random regular
  std::uint32_t extra = 0;          // ring: extra successors each side
  std::uint32_t rows = 0;           // grid/torus: 0 = as square as possible
  double edge_prob = 0.0;           // Erdos-Renyi: 0 = 2 ln(n)/n
  std::string edges;                // edge-list file (topology = edge list)
  std::string weights = "metropolis";
  std::uint64_t seed = 1;           // topology seed; identical on every node
  std::vector<std::string> seeds;   // endpoints of seed nodes to join through
  // run: membership and failure detection (membership/membership.h); LAN defaults, see docs/config.md.
  std::uint32_t probe_interval_ms = 200;
  std::uint32_t probe_timeout_ms = 100;
  std::uint32_t indirect_probes = 3;
  std::uint32_t suspicion_mult = 4;
  std::uint32_t recontact_interval_ms = 2000;  // run: ping one Dead member this often (partition heal); 0 off
  std::uint32_t start_timeout_ms = 60000;  // run: wait this long for cluster.nodes members before round 0
  std::uint32_t link_timeout_ms = 1000;    // run: an edge proposal unanswered this long is retried
};

struct AlgorithmConfig {
  std::string name = "dpsgd";
  double lr = 0.1;                      // eta_0 of the step-size schedule (lrSchedule())
  // eta_0 from the data instead of lr, 1/L (full gradient) or 1/(3 L_sample), L the largest
  // over the nodes, agreed by max-gossip (training/smoothness.h, daemon/node/sim_setup.cc).
  bool lr_auto = false;
  std::string lr_schedule = "constant";
  double lr_decay = 0.1;                // step: factor per period; inverse: slope
  std::uint64_t lr_decay_every = 0;     // step: period in rounds (required >= 1 for "step")
  double eta = 1.0;                     // DeepSqueeze averaging rate, (0,1]
  double gamma = 0.0;                   // CHOCO consensus step / LEAD dual step; 0 = the method's default
  bool gamma_adapt = true;              // CHOCO: halve gamma while the node's disagreement keeps growing
  double alpha = 0.5;                   // LEAD reference averaging, (0,1]
  std::uint32_t local_steps = 1;        // SGD steps between two communications
  std::string local_schedule = "fixed";
  std::uint32_t local_steps_max = 1;    // adaptive: upper bound on local steps
  std::uint64_t rounds = 100;
  double leader_pull = 0.1;             // lsgd: pull toward the local leader, lambda (step lr * lambda)
  std::uint64_t leader_period = 1;      // lsgd: the pull acts every this many rounds
  std::string leader_base = "dpsgd";    // lsgd: the method the pull is added to (dpsgd | deepsqueeze)
  double leader_global_pull = 0.0;      // lsgd: fraction of the way to the global leader's model per epoch
  std::uint64_t leader_global_period = 100;  // lsgd: rounds per global-leader epoch
  double distill_weight = 1.0;          // codistill: alpha, the distillation term's weight in the loss
  std::uint64_t distill_period = 1;     // codistill: neighbours' model copies are refreshed every this many rounds
  std::string distill_reference;        // codistill: file of reference rows (data.format); set = send predictions
  std::uint64_t distill_reference_rows = 256;  // codistill: the first this many rows of distill_reference
  // The last this many of `rounds` only average the models (fp32, no gradient step): every node then
  // ends near the average model. dpsgd, deepsqueeze, choco and lsgd only (algorithms/node.h).
  std::uint64_t final_consensus_rounds = 0;
  std::string final_consensus_codec = "fp32";  // fp32 | fp16 | bf16
  std::uint32_t round_timeout_ms = 2000;
  std::string estimator = "sgd";
  std::uint32_t batch = 32;
  double lsvrg_p = 0.0;                 // LSVRG refresh probability; 0 = 1/m (m = local samples)
};

struct ModelConfig {
  std::string kind = "softmax";
  std::vector<std::uint32_t> hidden{128};  // mlp: hidden layer widths
  double l1 = 0.0;                         // non-smooth R(x) = l1 ||x||_1 (proximal methods)
  double l2 = 0.0;                         // smooth l2/2 ||x||^2, part of f
};

struct DataConfig {
  std::string format = "idx";
  std::string train;                 // required unless format = synthetic (checked by the data loader)
  std::string test;                  // optional
  std::string train_labels;          // idx: labels file; "" = derived from the images file name
  std::string test_labels;           // idx: as train_labels, for the test images
  std::int32_t label_column = 0;     // csv: negative counts from the end (-1 = last column)
  bool header = false;               // csv: first line is a header
  bool regression = false;           // libsvm/csv: real-valued targets (model.kind = least_squares)
  std::string scaling = "none";
  std::string partition = "iid";
  double dirichlet_alpha = 0.5;
  std::uint64_t max_train = 0;       // 0 = all
  std::uint64_t max_test = 0;        // 0 = all
  std::uint32_t synthetic_samples = 50;  // per node
  std::uint32_t synthetic_dim = 40;
  double synthetic_heterogeneity = 1.0;  // 0 = iid nodes
  // Data shards when fewer than the nodes: node i trains on shard i mod shards (nodes i and i + shards
  // share their data). 0 = one shard per node. Lets 100,000 simulated nodes train on 60,000 images.
  std::uint32_t shards = 0;
  std::uint64_t seed = 1;
};

// A scripted fault: node `node` crashes (or joins) at the start of round `round`.
struct FaultEvent {
  PeerId node = 0;
  Round round = 0;
  friend bool operator==(const FaultEvent&, const FaultEvent&) = default;
};

struct FaultsConfig {
  double drop = 0.0;                  // per-message drop probability (stateless algorithms only)
  double link_mbit = 0.0;             // run: token-bucket cap per outgoing link (model frames), 0 = none
  std::vector<FaultEvent> crash;
  std::vector<FaultEvent> join;
};

struct SimConfig {
  std::uint64_t eval_every = 10;      // rounds between evaluations
  std::uint64_t eval_test_max = 0;    // test samples used per evaluation; 0 = all
  std::uint32_t threads = 1;
};

struct MonitorConfig {
  std::uint64_t eval_every = 50;       // run: rounds between test-accuracy evaluations (0 = never)
  std::uint64_t eval_test_max = 2000;  // run: test samples used per evaluation (0 = all)
  std::uint32_t status_every_ms = 500; // run: how often status.json is rewritten
  std::uint32_t progress_every_ms = 2000;  // run: how often a progress line is printed
};

struct SecurityConfig {
  bool enable = false;   // CurveZMQ with an allow-list
  std::string keys_dir;  // required when enable = true
};

// run: serve a local trainer process instead of a built-in model (docs/trainer.md, daemon/bridge/trainer_bridge.h).
struct TrainerConfig {
  bool enable = false;
  std::string mode = "model";              // model: the trainer steps, the daemon mixes; gradient: the daemon steps
  std::uint32_t idle_timeout_ms = 60000;   // an attached trainer silent this long no longer drives rounds
  std::uint32_t copy_threads = 0;          // threads copying its parameters in and out, 0 = cores up to 4
};

struct Config {
  NodeConfig node;
  ClusterConfig cluster;
  AlgorithmConfig algorithm;
  compress::CompressorSpec compressor;  // [compressor] without beta
  double compressor_beta = 1.0;         // [compressor].beta: error-feedback low-pass factor, (0,1]
  std::uint32_t compressor_cltk_delay = 0;  // [compressor].cltk_delay: rounds a cltk set takes to spread; 0 = diameter
  std::uint32_t compressor_cltk_period = 1;  // [compressor].cltk_period: rounds each cltk set is used
  std::uint64_t compressor_lgc_warmup = 200;  // [compressor].lgc_warmup: top-k rounds while member 0 learns the basis
  std::uint64_t compressor_lgc_window = 10;   // [compressor].lgc_window: rounds of message sums per learning sample
  std::uint32_t compressor_lgc_delay = 0;     // [compressor].lgc_delay: rounds the basis takes to spread; 0 = diameter
  ModelConfig model;
  DataConfig data;
  FaultsConfig faults;
  SimConfig sim;
  MonitorConfig monitor;
  SecurityConfig security;
  TrainerConfig trainer;
};

// Defaults, then `file` (if given), then each "section.key=value" of `sets` in order; then validate().
// An override value is read as a TOML value when it parses as one (numbers, booleans, arrays, quoted
// strings, inline tables) and as the bare text otherwise, so `--set algorithm.name=choco` works. A
// string-valued key always takes the bare text unless it is quoted; a string-array key also accepts a
// bare comma-separated list. Throws ConfigError listing every problem found.
Config loadConfig(const std::optional<std::string>& file, const std::vector<std::string>& sets);

// As loadConfig, from TOML text; `source` names it in error messages (e.g. "<string>").
Config parseConfig(std::string_view toml_text, std::string_view source, const std::vector<std::string>& sets);

// Every problem of an already built Config (ranges, names, cross-key rules), each message naming its
// key. Empty when the config is usable.
std::vector<std::string> validate(const Config& config);

// The resolved config as {section: {key: value}}, every key present; written into sim results.
nlohmann::json toJson(const Config& config);

// A library message that names a bare parameter ("degree: ...", "weights: ...", "edge list '...'", from the
// topology, data and algorithm modules) rewritten to name the config key the user sets
// ("cluster.degree: ..."). Other messages are returned unchanged.
std::string withConfigKey(const std::string& message);

// Conversions for the other modules. Both assume a validated config (they throw ConfigError otherwise).
topology::TopologyParams topologyParams(const ClusterConfig& cluster);
topology::WeightRule weightRule(const ClusterConfig& cluster);
// The method's parameters as every node derives them (the simulator, `gossipd run` and the trainer bridge),
// except the per-node seed, incarnation and l1, which the runtime sets. With cltk: the initial nodes lead
// in turn, and a cltk_delay of 0 becomes the diameter of the initial graph.
algo::AlgorithmParams algorithmParams(const Config& config);

// The [algorithm] step-size and local-step schedules as training's value types (t counts from 0):
//   constant: lr                      step:   lr * lr_decay^floor(t / lr_decay_every)
//   inverse:  lr / (1 + lr_decay * t)  cosine: lr * (1 + cos(pi * min(t, rounds) / rounds)) / 2
training::LrSchedule lrSchedule(const AlgorithmConfig& algorithm);
training::LocalStepsSchedule localSchedule(const AlgorithmConfig& algorithm);

}  // namespace gossip::daemon
