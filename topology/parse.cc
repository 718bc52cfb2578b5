// Names of topology kinds and weight rules as written in config files and on the command line.
// Parsing is case-insensitive and treats '_' like '-', so "random_regular" and "Random-Regular" agree.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "topology/topology.h"

namespace gossip::topology {

namespace {

// The first name listed for a kind is its canonical name (kindName); the others are accepted aliases.
constexpr std::array<std::pair<std::string_view, Kind>, 17> kKindNames{{
    {"ring", Kind::Ring},
    {"grid", Kind::Grid},
    {"torus", Kind::Torus},
    {"random-regular", Kind::RandomRegular},
    {"regular", Kind::RandomRegular},
    {"erdos-renyi", Kind::ErdosRenyi},
    {"er", Kind::ErdosRenyi},
    {"exponential", Kind::Exponential},
    {"exp", Kind::Exponential},
    {"one-peer-exponential", Kind::OnePeerExponential},
    {"one-peer", Kind::OnePeerExponential},
    {"complete", Kind::Complete},
    {"full", Kind::Complete},
    {"star", Kind::Star},
    {"edge-list", Kind::EdgeList},
    {"edges", Kind::EdgeList},
    {"edgelist", Kind::EdgeList},
}};

constexpr std::array<std::pair<std::string_view, WeightRule>, 6> kRuleNames{{
    {"metropolis", WeightRule::Metropolis},
    {"mh", WeightRule::Metropolis},
    {"metropolis-hastings", WeightRule::Metropolis},
    {"maxdegree", WeightRule::MaxDegree},
    {"max-degree", WeightRule::MaxDegree},
    {"uniform", WeightRule::Uniform},
}};

std::string normalize(const std::string& name) {
  std::string s = name;
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

template <class Table>
std::string choices(const Table& table) {
  std::string out;
  for (const auto& [name, value] : table) {
    (void)value;
    out += out.empty() ? "" : ", ";
    out += name;
  }
  return out;
}

}  // namespace

Kind parseKind(const std::string& name) {
  const std::string key = normalize(name);
  for (const auto& [n, k] : kKindNames) {
    if (n == key) return k;
  }
  throw ConfigError("topology: unknown kind '" + name + "' (one of " + choices(kKindNames) + ")");
}

std::string kindName(Kind k) {
  for (const auto& [n, kind] : kKindNames) {
    if (kind == k) return std::string(n);
  }
  return "unknown";
}

WeightRule parseWeightRule(const std::string& name) {
  const std::string key = normalize(name);
  for (const auto& [n, r] : kRuleNames) {
    if (n == key) return r;
  }
  throw ConfigError("weights: unknown rule '" + name + "' (one of " + choices(kRuleNames) + ")");
}

}  // namespace gossip::topology
