#include "daemon/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "core/error.h"
#include "daemon/config/config_parse.h"
#include "daemon/config/config_schema.h"

namespace gossip::daemon {
namespace {

std::string readFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError("cannot read config file '" + path + "': is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read config file '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file '" + path + "': read error");
  return text.str();
}

// toml++ reports a syntax error with its position; the message keeps only the first line of the
// description so the whole error stays one line.
toml::table parseDocument(std::string_view text, std::string_view source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::string what(e.description());
    if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    const auto& pos = e.source().begin;
    throw ConfigError(std::string(source) + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                      ": " + what);
  }
}

std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
  return out;
}

Config finish(const toml::table* doc, const std::vector<std::string>& sets) {
  Config config;
  std::vector<std::string> problems;
  if (doc) detail::applyTable(*doc, config, problems);
  for (const auto& s : sets) detail::applySet(s, config, problems);
  for (auto& p : validate(config)) problems.push_back(std::move(p));
  if (!problems.empty()) throw ConfigError(join(problems));
  return config;
}

struct ToJson {
  nlohmann::json operator()(const std::vector<FaultEvent>* v) const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : *v) out.push_back({{"node", e.node}, {"round", e.round}});
    return out;
  }
  template <class T>
  nlohmann::json operator()(const T* v) const {
    return *v;
  }
};

}  // namespace

Config loadConfig(const std::optional<std::string>& file, const std::vector<std::string>& sets) {
  if (!file) return finish(nullptr, sets);
  const toml::table doc = parseDocument(readFile(*file), *file);
  return finish(&doc, sets);
}

Config parseConfig(std::string_view toml_text, std::string_view source, const std::vector<std::string>& sets) {
  const toml::table doc = parseDocument(toml_text, source);
  return finish(&doc, sets);
}

nlohmann::json toJson(const Config& config) {
  nlohmann::json out = nlohmann::json::object();
  for (auto section : detail::sectionNames()) out[std::string(section)] = nlohmann::json::object();
  for (const auto& key : detail::schema())
    out[std::string(key.section)][std::string(key.name)] = std::visit(ToJson{}, detail::constSlot(key, config));
  return out;
}

std::string withConfigKey(const std::string& msg) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"degree: ", "cluster.degree: "},   {"edge_prob: ", "cluster.edge_prob: "}, {"edge_file: ", "cluster.edges: "},
      {"edge list ", "cluster.edges: edge list "}, {"weights: ", "cluster.weights: "}, {"rows: ", "cluster.rows: "},
      {"topology: ", "cluster.topology: "}, {"nodes: ", "cluster.nodes: "},  {"algorithm ", "compressor.name: algorithm "}};
  for (const auto& [from, to] : kMap)
    if (msg.starts_with(from)) return std::string(to) + msg.substr(from.size());
  return msg;
}

topology::TopologyParams topologyParams(const ClusterConfig& cluster) {
  topology::TopologyParams p;
  p.kind = topology::parseKind(cluster.topology);
  p.extra = cluster.extra;
  p.degree = cluster.degree;
  p.edge_prob = cluster.edge_prob;
  p.rows = cluster.rows;
  p.seed = cluster.seed;
  p.edge_file = cluster.edges;
  return p;
}

topology::WeightRule weightRule(const ClusterConfig& cluster) { return topology::parseWeightRule(cluster.weights); }

algo::AlgorithmParams algorithmParams(const Config& c) {
  algo::AlgorithmParams p;
  p.name = c.algorithm.name;
  p.eta = c.algorithm.eta;
  p.gamma = c.algorithm.gamma;
  p.gamma_adapt = c.algorithm.gamma_adapt;
  p.leader_pull = c.algorithm.leader_pull;
  p.leader_period = c.algorithm.leader_period;
  p.leader_base = c.algorithm.leader_base;
  p.leader_global_pull = c.algorithm.leader_global_pull;
  p.leader_global_period = c.algorithm.leader_global_period;
  p.distill_weight = c.algorithm.distill_weight;
  p.distill_period = c.algorithm.distill_period;
  p.alpha = c.algorithm.alpha;
  p.beta = c.compressor_beta;
  p.seed = c.cluster.seed;
  // cltk's sets and lgc's basis are flooded along the send edges of the initial graph (a directed graph's
  // diameter bounds the symmetrised one's, which the replica methods use). A graph that changes later
  // (churn, the time-varying exponential) may need more: set compressor.cltk_delay / lgc_delay then.
  const auto initialDiameter = [&c] {
    std::vector<PeerId> ids(c.cluster.nodes);
    for (PeerId i = 0; i < ids.size(); ++i) ids[i] = i;
    return static_cast<std::uint32_t>(topology::diameter(topology::buildGraph(ids, topologyParams(c.cluster))));
  };
  if (c.compressor.name == "cltk") {
    p.cltk_nodes = c.cluster.nodes;
    p.cltk_delay = c.compressor_cltk_delay;
    p.cltk_period = c.compressor_cltk_period;
    if (p.cltk_delay == 0) p.cltk_delay = initialDiameter();
  }
  if (c.compressor.name == "lgc") {
    p.lgc_warmup = c.compressor_lgc_warmup;
    p.lgc_window = c.compressor_lgc_window;
    p.lgc_delay = c.compressor_lgc_delay == 0 ? initialDiameter() : c.compressor_lgc_delay;
  }
  if (p.name == "lsgd" && p.leader_base == "dpsgd" && p.leader_pull > 0 && !c.algorithm.lr_auto) {
    // x_i <- (w_ii - lr lambda) C(x_i) + lr lambda C(x_l) + sum_j w_ij C(x_j) - lr g_i: above the self weight the
    // combination is no longer convex and a pulled node overshoots its leader (lambda = 8 diverged, results
    // section 3). The configured lr is the largest of every schedule. The graph as the stateless methods
    // build it (engine/view.h): symmetrised unless the weights are uniform.
    std::vector<PeerId> ids(c.cluster.nodes);
    for (PeerId i = 0; i < ids.size(); ++i) ids[i] = i;
    const auto rule = weightRule(c.cluster);
    auto g = topology::buildGraph(ids, topologyParams(c.cluster));
    if (rule != topology::WeightRule::Uniform) g = topology::symmetrize(g);
    double minSelf = 1.0;
    for (PeerId i : ids) minSelf = std::min(minSelf, topology::mixingRow(g, i, rule).self);
    const double step = c.algorithm.lr * p.leader_pull;
    if (step > minSelf) {
      char msg[200];
      std::snprintf(msg, sizeof msg,
                    "algorithm.leader_pull: the pull step lr * leader_pull (%.4g) must be at most the graph's smallest "
                    "self weight (%.4g), or a pulled node overshoots its leader",
                    step, minSelf);
      throw ConfigError(msg);
    }
  }
  if (p.name == "lsgd" && p.leader_global_pull > 0) {
    // The election floods one hop per round: an epoch shorter than the diameter leaves nodes with
    // different leaders (and a copy that cannot reach every node within its epoch).
    std::vector<PeerId> ids(c.cluster.nodes);
    for (PeerId i = 0; i < ids.size(); ++i) ids[i] = i;
    const auto d = topology::diameter(topology::buildGraph(ids, topologyParams(c.cluster)));
    if (p.leader_global_period < d)
      throw ConfigError("algorithm.leader_global_period must be at least the graph's diameter (" + std::to_string(d) +
                        ") so that every node elects the same global leader (got " +
                        std::to_string(p.leader_global_period) + ")");
  }
  return p;
}

training::LrSchedule lrSchedule(const AlgorithmConfig& a) {
  training::LrSchedule s;
  s.kind = a.lr_schedule;
  s.lr = a.lr;
  if (a.lr_schedule == "step") {
    s.gamma = a.lr_decay;
    s.step_every = std::max<Round>(1, a.lr_decay_every);
  } else if (a.lr_schedule == "inverse") {
    // lr / (1 + decay t), written as a / (b + t)
    if (a.lr_decay <= 0) {
      s.kind = "constant";
    } else {
      s.a = a.lr / a.lr_decay;
      s.b = 1.0 / a.lr_decay;
    }
  } else if (a.lr_schedule == "cosine") {
    s.horizon = std::max<Round>(1, a.rounds);
    s.lr_min = 0.0;
  }
  s.validate("algorithm");
  return s;
}

training::LocalStepsSchedule localSchedule(const AlgorithmConfig& a) {
  training::LocalStepsSchedule s;
  s.kind = a.local_schedule == "adaptive" ? "adaptive" : "constant";
  s.p0 = static_cast<int>(a.local_steps);
  s.p_max = static_cast<int>(std::max(a.local_steps, a.local_steps_max));
  s.ramp = std::max<Round>(1, a.rounds);
  s.validate("algorithm.local_steps");
  return s;
}

}  // namespace gossip::daemon
