#include "daemon/config.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <variant>

#include "core/error.h"
#include "daemon/config_parse.h"
#include "daemon/config_schema.h"

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

double learningRate(const AlgorithmConfig& a, Round t) {
  const double td = static_cast<double>(t);
  if (a.lr_schedule == "constant") return a.lr;
  if (a.lr_schedule == "step")
    return a.lr_decay_every == 0 ? a.lr : a.lr * std::pow(a.lr_decay, static_cast<double>(t / a.lr_decay_every));
  if (a.lr_schedule == "inverse") return a.lr / (1.0 + a.lr_decay * td);
  if (a.lr_schedule == "cosine") {
    const double rounds = static_cast<double>(a.rounds == 0 ? 1 : a.rounds);
    return a.lr * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(td, rounds) / rounds));
  }
  throw ConfigError("algorithm.lr_schedule: unknown schedule '" + a.lr_schedule + "'");
}

}  // namespace gossip::daemon
