// validate(): the per-key rules come from the schema (ranges, allowed names); the rules that relate
// several keys are written out below. Every message starts with the key the user has to change.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <variant>

#include "core/error.h"
#include "daemon/config/advertise.h"
#include "daemon/config/config.h"
#include "daemon/config/config_schema.h"
#include "daemon/config/http_address.h"
#include "daemon/log/log.h"

namespace gossip::daemon {
namespace {

using detail::KeySpec;

template <class List>
bool contains(const List& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string joined(std::span<const std::string_view> names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Built by appending: GCC 12 warns (-Wrestrict, a known false positive) on "'" + std::string(s).
std::string inQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.append(1, '\'').append(s).append(1, '\'');
  return out;
}

// Range, finiteness and name checks for one key.
struct KeyChecker {
  const KeySpec& key;
  std::vector<std::string>& problems;

  void number(const std::string& name, double v) const {
    if (!std::isfinite(v)) problems.push_back(name + " must be finite (got " + detail::formatNumber(v) + ")");
    else if (!key.range.contains(v))
      problems.push_back(name + " " + key.range.describe() + " (got " + detail::formatNumber(v) + ")");
  }
  void operator()(const double* v) const { number(key.fullName(), *v); }
  void operator()(const std::int32_t* v) const { number(key.fullName(), static_cast<double>(*v)); }
  void operator()(const std::uint32_t* v) const { number(key.fullName(), static_cast<double>(*v)); }
  void operator()(const std::uint64_t* v) const { number(key.fullName(), static_cast<double>(*v)); }
  void operator()(const std::vector<std::uint32_t>* v) const {
    for (std::size_t i = 0; i < v->size(); ++i)
      number(key.fullName() + "[" + std::to_string(i) + "]", static_cast<double>((*v)[i]));
  }
  void operator()(const std::string* v) const {
    if (!key.choices) return;
    const auto names = key.choices();
    if (contains(names, *v)) return;
    problems.push_back(key.fullName() + " must be one of " + joined(names) + " (got " + inQuotes(*v) + ")" +
                       detail::didYouMean(*v, names));
  }
  template <class T>
  void operator()(const T*) const {}  // booleans, string lists and fault lists have no per-key rule
};

void checkKeys(const Config& c, std::vector<std::string>& p) {
  for (const auto& key : detail::schema()) std::visit(KeyChecker{key, p}, detail::constSlot(key, c));
}

// Peers connect to the advertised endpoint, so it must name one host they can reach: a wildcard bind
// without node.advertise would hand every member "tcp://0.0.0.0:7000" (docs/config.md).
void checkAdvertise(const NodeConfig& n, std::vector<std::string>& p) {
  const std::string& a = n.advertise;
  if (a.empty()) {
    if (bindsEveryInterface(n.listen))
      p.push_back("node.advertise is required when node.listen binds every interface (got '" + n.listen +
                  "'): set it to a name or address other nodes reach, e.g. the host or service name");
    return;
  }
  const std::string full = a.starts_with("tcp://") ? a : "tcp://" + a + ":1";
  const auto parts = splitTcpEndpoint(full);
  if (!parts || (!a.starts_with("tcp://") && a.find_first_of(":/") != std::string::npos))
    p.push_back("node.advertise must be a host name or tcp://host:port (got '" + a + "')");
  else if (bindsEveryInterface(full) || parts->port == "0" || parts->port == "*")
    p.push_back("node.advertise must name one reachable host and port, not a wildcard (got '" + a + "')");
}

void checkNode(const Config& c, std::vector<std::string>& p) {
  if (c.node.listen.empty()) p.push_back("node.listen must not be empty");
  // It travels in every Join and is printed in refusals: short, one line, printable.
  const auto& name = c.cluster.name;
  if (name.empty() || name.size() > 64 ||
      std::any_of(name.begin(), name.end(), [](char ch) { return ch < 0x21 || ch > 0x7e; }))
    p.push_back("cluster.name must be 1 to 64 printable characters without spaces (got '" + name + "')");
  if (c.node.data_dir.empty()) p.push_back("node.data_dir must not be empty");
  checkAdvertise(c.node, p);
  if (!c.node.http.empty() && !parseHttpAddress(c.node.http))
    p.push_back("node.http must be HOST:PORT with HOST an IP address or localhost, or \"\" for no HTTP server (got '" +
                c.node.http + "')");
  // A seed is dialled as it is written: "127.0.0.1:17000" passed here and ended the node later with
  // "internal error" (issue 28); a wildcard or port 0 names nobody to connect to.
  for (std::size_t i = 0; i < c.cluster.seeds.size(); ++i) {
    const std::string& s = c.cluster.seeds[i];
    const std::string key = "cluster.seeds[" + std::to_string(i) + "]";
    const auto parts = splitTcpEndpoint(s);
    if (s.empty())
      p.push_back(key + " must not be empty");
    else if (!parts || parts->port == "*")
      p.push_back(key + " must be tcp://HOST:PORT (got '" + s + "')");
    else if (bindsEveryInterface(s) || parts->port == "0")
      p.push_back(key + " must name one reachable host and port, not a wildcard (got '" + s + "')");
  }
  if (c.security.enable && c.security.keys_dir.empty())
    p.push_back("security.keys_dir is required when security.enable = true");
  if (const auto o = logging::parseOverrides(c.node.log_levels); !o.error.empty())
    p.push_back("node.log_levels: " + o.error + " (got " + inQuotes(c.node.log_levels) + ")");
  if (c.cluster.probe_timeout_ms >= c.cluster.probe_interval_ms)
    p.push_back("cluster.probe_timeout_ms must be below cluster.probe_interval_ms (got " +
                std::to_string(c.cluster.probe_timeout_ms) + " >= " + std::to_string(c.cluster.probe_interval_ms) + ")");
}

void checkTopology(const Config& c, std::vector<std::string>& p) {
  try {
    if (topology::parseKind(c.cluster.topology) == topology::Kind::EdgeList && c.cluster.edges.empty())
      p.push_back("cluster.edges (an edge-list file) is required when cluster.topology = " +
                  inQuotes(c.cluster.topology));
  } catch (const ConfigError& e) {
    // The topology module words its message as "topology: unknown kind ..."; keep one key prefix.
    std::string_view why = e.what();
    if (why.starts_with("topology: ")) why.remove_prefix(10);
    p.push_back("cluster.topology: " + std::string(why));
  }
  try {
    (void)topology::parseWeightRule(c.cluster.weights);
  } catch (const ConfigError& e) {
    p.push_back(withConfigKey(e.what()));
  }
}

void checkAlgorithm(const Config& c, std::vector<std::string>& p) {
  const auto& a = c.algorithm;
  // training/smoothness.h bounds the curvature of the linear models only.
  if (a.lr_auto && c.model.kind != "logistic" && c.model.kind != "softmax" && c.model.kind != "least_squares")
    p.push_back("algorithm.lr_auto needs model.kind = 'logistic', 'softmax' or 'least_squares' (no smoothness bound is known for " +
                inQuotes(c.model.kind) + "): give algorithm.lr");
  if (a.lr_schedule == "step") {
    if (a.lr_decay_every == 0) p.push_back("algorithm.lr_decay_every must be >= 1 when algorithm.lr_schedule = 'step'");
    if (!(a.lr_decay > 0 && a.lr_decay <= 1))
      p.push_back("algorithm.lr_decay must be in (0,1] when algorithm.lr_schedule = 'step' (got " +
                  detail::formatNumber(a.lr_decay) + ")");
  }
  if (a.local_schedule == "adaptive" && a.local_steps_max < a.local_steps)
    p.push_back("algorithm.local_steps_max must be >= algorithm.local_steps (" + std::to_string(a.local_steps) +
                ") when algorithm.local_schedule = 'adaptive' (got " + std::to_string(a.local_steps_max) + ")");
  // NIDS and ED exchange exact fp32 differences (ALGORITHMS.md §4.4); they have no compressed form, so a
  // compressor would be ignored while the results claim it was used.
  if ((a.name == "nids" || a.name == "ed") && c.compressor.name != "fp32" && c.compressor.name != "identity")
    p.push_back("compressor.name must be fp32 when algorithm.name = " + inQuotes(a.name) + " (" + a.name +
                " sends uncompressed fp32 differences; use lead or choco to compress) (got " +
                inQuotes(c.compressor.name) + ")");
  // The consensus phase drops the method's own update; the exact methods' dual would then no longer sum
  // to the fixed point they are exact for, so only the methods without a dual take it.
  if (a.final_consensus_rounds > 0) {
    if (a.final_consensus_rounds >= a.rounds)
      p.push_back("algorithm.final_consensus_rounds must be below algorithm.rounds (" + std::to_string(a.rounds) +
                  ") (got " + std::to_string(a.final_consensus_rounds) + ")");
    if (a.name != "dpsgd" && a.name != "deepsqueeze" && a.name != "choco" && a.name != "lsgd" && contains(kAlgorithmNames, a.name))
      p.push_back("algorithm.final_consensus_rounds applies to dpsgd, deepsqueeze, choco and lsgd, not algorithm.name = " +
                  inQuotes(a.name) + " (an exact method reaches consensus by itself)");
  }
  // Codistillation's term is computed from the model's class probabilities on a minibatch (algorithms/codistill.h).
  if (a.name == "codistill") {
    if (c.model.kind != "softmax" && c.model.kind != "mlp")
      p.push_back("algorithm.name = 'codistill' needs model.kind = 'softmax' or 'mlp' (a softmax output to distill), not " +
                  inQuotes(c.model.kind));
    if (a.estimator != "sgd")
      p.push_back("algorithm.name = 'codistill' needs algorithm.estimator = 'sgd' (the term is taken on a minibatch), not " +
                  inQuotes(a.estimator));
  }
  if (!a.distill_reference.empty() && a.name != "codistill" && contains(kAlgorithmNames, a.name))
    p.push_back("algorithm.distill_reference applies to algorithm.name = 'codistill', not " + inQuotes(a.name));
  if (!a.distill_reference.empty() && (c.data.format == "synthetic" || c.data.train.find("{id}") != std::string::npos))
    p.push_back("algorithm.distill_reference needs one data.train file in idx, csv or libsvm format (its rows are "
                "scaled like the training rows), not synthetic data or per-node files");
  if (c.model.kind == "mlp" && c.model.hidden.empty())
    p.push_back("model.hidden must list at least one layer width when model.kind = 'mlp'");
}

// The trainer bridge (docs/trainer.md): what each mode can drive.
void checkTrainer(const Config& c, std::vector<std::string>& p) {
  const auto& t = c.trainer;
  if (!t.enable) return;
  if (c.algorithm.lr_auto)
    p.push_back("algorithm.lr_auto cannot be used with trainer.enable: the trainer's model is not known to the daemon; give algorithm.lr");
  if (c.algorithm.name == "codistill")
    p.push_back("algorithm.name = 'codistill' cannot be used with trainer.enable: its distillation term needs the daemon's own model");
  if (t.mode == "model" && !contains(kModelModeAlgorithms, c.algorithm.name) && contains(kAlgorithmNames, c.algorithm.name))
    p.push_back("trainer.mode = 'model' works with " + joined(kModelModeAlgorithms) + ", not algorithm.name = " +
                inQuotes(c.algorithm.name) + " (it needs the gradient inside its update: use trainer.mode = 'gradient')");
  if (t.mode == "gradient" && (c.algorithm.local_steps != 1 || c.algorithm.local_schedule != "fixed"))
    p.push_back("algorithm.local_steps must be 1 with a fixed schedule when trainer.mode = 'gradient' (local steps "
                "would need gradients the trainer never computed; take them in the trainer with trainer.mode = 'model')");
}

// Message loss is only survivable by stateless algorithms (ALGORITHMS.md §5.2): for the replica
// algorithms one lost message corrupts state for good, so injecting drops there tests nothing useful.
void checkFaults(const Config& c, std::vector<std::string>& p) {
  // An unknown algorithm name is already reported; do not pile a second message on it.
  if (c.faults.drop > 0 && contains(kAlgorithmNames, c.algorithm.name) &&
      !contains(kStatelessAlgorithms, c.algorithm.name))
    p.push_back("faults.drop applies only to stateless algorithms (" + joined(kStatelessAlgorithms) +
                "), not algorithm.name = " + inQuotes(c.algorithm.name));
  const auto rounds = [&](const std::vector<FaultEvent>& list, const char* key) {
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].round >= c.algorithm.rounds)
        p.push_back(std::string("faults.") + key + "[" + std::to_string(i) + "].round must be < algorithm.rounds (" +
                    std::to_string(c.algorithm.rounds) + ") (got " + std::to_string(list[i].round) + ")");
  };
  rounds(c.faults.crash, "crash");
  rounds(c.faults.join, "join");
  const auto ids = [&](const std::vector<FaultEvent>& list, const char* key) {
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].node >= kMaxSimNodes)
        p.push_back(std::string("faults.") + key + "[" + std::to_string(i) + "].node must be < " +
                    std::to_string(kMaxSimNodes) + " (got " + std::to_string(list[i].node) + ")");
  };
  ids(c.faults.crash, "crash");
  ids(c.faults.join, "join");
  // Replay the membership timeline: nodes 0..nodes-1 start alive; a crash needs an alive node, a join a node
  // that is not alive (a new id, or a crashed one restarting with fresh state). Crashes of a round come first.
  struct Ev {
    Round round;
    bool join;
    std::size_t index;
    PeerId node;
  };
  std::vector<Ev> evs;
  for (std::size_t i = 0; i < c.faults.crash.size(); ++i) evs.push_back({c.faults.crash[i].round, false, i, c.faults.crash[i].node});
  for (std::size_t i = 0; i < c.faults.join.size(); ++i) evs.push_back({c.faults.join[i].round, true, i, c.faults.join[i].node});
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    return a.round != b.round ? a.round < b.round : (!a.join && b.join);
  });
  std::set<PeerId> alive;
  for (PeerId i = 0; i < c.cluster.nodes; ++i) alive.insert(i);
  for (const auto& e : evs) {
    const std::string name = std::string("faults.") + (e.join ? "join[" : "crash[") + std::to_string(e.index) + "].node";
    if (e.join && !alive.insert(e.node).second)
      p.push_back(name + ": node " + std::to_string(e.node) + " is already alive at round " + std::to_string(e.round));
    if (!e.join && alive.erase(e.node) == 0)
      p.push_back(name + ": node " + std::to_string(e.node) + " is not alive at round " + std::to_string(e.round));
  }
  if (!evs.empty() && alive.empty()) p.push_back("faults.crash: every node has crashed by the end of the run");
}

}  // namespace

std::vector<std::string> validate(const Config& config) {
  std::vector<std::string> problems;
  checkKeys(config, problems);
  checkNode(config, problems);
  checkTopology(config, problems);
  checkAlgorithm(config, problems);
  checkTrainer(config, problems);
  checkFaults(config, problems);
  return problems;
}

}  // namespace gossip::daemon
