// gossipd topo: builds one topology over ids 0..N-1 exactly as a daemon would (same library calls),
// and prints its edges, every node's mixing row and the spectral numbers. Human-readable by default,
// JSON with --json (scripts/topology_table.py turns that into docs/topologies.md).
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/cli/cli.h"
#include "topology/topology.h"

namespace gossip::cmd {

namespace {

namespace topo = gossip::topology;

// The graph, its edges and mixing rows are cheap at any size up to the cluster limit. The spectral numbers
// come from a dense eigen-decomposition, O(n^3) time and O(n^2) memory (4096 nodes took over a minute), so
// above kMaxSpectrumNodes they are skipped with a note.
constexpr std::size_t kMaxNodes = 65536;
constexpr std::size_t kMaxSpectrumNodes = 1024;

constexpr const char* kTopoUsage =
    "usage: gossipd topo --topology T --nodes N [--degree D] [--extra E] [--rows R] [--prob P] [--seed S]\n"
    "                    [--round R] [--weights metropolis|mh|maxdegree|uniform] [--lazy] [--edges FILE] [--json]\n"
    "  print a topology's edges, mixing weights and spectral gap (docs/topologies.md); the spectrum is\n"
    "  computed for up to 1024 nodes.\n";

struct Options {
  topo::TopologyParams params;
  std::size_t nodes = 0;
  topo::WeightRule rule = topo::WeightRule::Metropolis;
  bool lazy = false;
  bool json = false;
  bool help = false;
  std::set<std::string> given;  // flags seen, to reject repeats and flags that do not apply
};

bool isExponential(topo::Kind k) { return k == topo::Kind::Exponential || k == topo::Kind::OnePeerExponential; }

void requireKind(const Options& o, const char* flag, std::initializer_list<topo::Kind> kinds, const char* which) {
  if (!o.given.count(flag)) return;
  for (topo::Kind k : kinds) {
    if (o.params.kind == k) return;
  }
  throw ConfigError(std::string(flag) + ": only applies to --topology " + which);
}

Options parseOptions(std::vector<std::string> argv) {
  Options o;
  cli::Args args{std::move(argv)};
  while (!args.done()) {
    std::string flag = args.items[args.pos++];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      return o;
    }
    std::string inline_value;
    bool has_inline = false;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
      has_inline = true;
    }
    if (!o.given.insert(flag).second) throw ConfigError(flag + ": given more than once");
    auto value = [&]() { return has_inline ? inline_value : args.next(flag); };
    auto noValue = [&]() {
      if (has_inline) throw ConfigError(flag + ": takes no value");
    };
    if (flag == "--topology") {
      const std::string v = value();
      try {
        o.params.kind = topo::parseKind(v);
      } catch (const ConfigError& e) {
        throw ConfigError("--" + std::string(e.what()));
      }
    } else if (flag == "--nodes") {
      o.nodes = cli::parseNumber<std::size_t>(value(), flag);
    } else if (flag == "--degree") {
      o.params.degree = cli::parseNumber<unsigned>(value(), flag);
    } else if (flag == "--extra") {
      o.params.extra = cli::parseNumber<unsigned>(value(), flag);
    } else if (flag == "--rows") {
      o.params.rows = cli::parseNumber<unsigned>(value(), flag);
    } else if (flag == "--prob") {
      o.params.edge_prob = cli::parseNumber<double>(value(), flag);
    } else if (flag == "--seed") {
      o.params.seed = cli::parseNumber<std::uint64_t>(value(), flag);
    } else if (flag == "--round") {
      o.params.round = cli::parseNumber<Round>(value(), flag);
    } else if (flag == "--weights") {
      try {
        o.rule = topo::parseWeightRule(value());
      } catch (const ConfigError& e) {
        throw ConfigError("--" + std::string(e.what()));
      }
    } else if (flag == "--edges") {
      o.params.edge_file = value();
    } else if (flag == "--lazy") {
      noValue();
      o.lazy = true;
    } else if (flag == "--json") {
      noValue();
      o.json = true;
    } else {
      throw ConfigError("unknown option '" + flag + "' (see 'gossipd help')");
    }
  }
  return o;
}

void validate(Options& o) {
  using K = topo::Kind;
  if (!o.given.count("--topology")) throw ConfigError("--topology: required");
  if (!o.given.count("--nodes")) throw ConfigError("--nodes: required");
  if (o.nodes < 1 || o.nodes > kMaxNodes) {
    throw ConfigError("--nodes: must be between 1 and " + std::to_string(kMaxNodes) + ", got " + std::to_string(o.nodes));
  }
  requireKind(o, "--degree", {K::RandomRegular}, "random-regular");
  requireKind(o, "--extra", {K::Ring}, "ring");
  requireKind(o, "--rows", {K::Grid, K::Torus}, "grid or torus");
  requireKind(o, "--prob", {K::ErdosRenyi}, "erdos-renyi");
  requireKind(o, "--round", {K::OnePeerExponential}, "one-peer-exponential");
  requireKind(o, "--edges", {K::EdgeList}, "edge-list");
  if (o.params.kind == K::EdgeList && !o.given.count("--edges")) throw ConfigError("--edges: required for edge-list");
  if (o.given.count("--rows") && (o.params.rows < 1 || o.params.rows > o.nodes)) {
    throw ConfigError("--rows: must be between 1 and --nodes, got " + std::to_string(o.params.rows));
  }
  if (o.given.count("--prob") && !(o.params.edge_prob > 0.0 && o.params.edge_prob <= 1.0)) {
    throw ConfigError("--prob: must be in (0, 1], got " + nlohmann::json(o.params.edge_prob).dump());
  }
  // The exponential graphs come with their own 1/(tau+1) and 1/2 weights (ALGORITHMS.md §2.5).
  if (!o.given.count("--weights") && isExponential(o.params.kind)) o.rule = topo::WeightRule::Uniform;
}

// Library messages name the parameter ("degree: ..."); the user typed a flag, so name that instead.
[[noreturn]] void rethrowAsFlag(const ConfigError& e) {
  const std::string msg = e.what();
  static const std::pair<const char*, const char*> kMap[] = {
      {"degree: ", "--degree: "}, {"edge_prob: ", "--prob: "}, {"edge list ", "--edges: edge list "},
      {"edge_file: ", "--edges: "}, {"weights: ", "--weights: "}};
  for (const auto& [from, to] : kMap) {
    if (msg.rfind(from, 0) == 0) throw ConfigError(to + msg.substr(std::string(from).size()));
  }
  throw e;
}

struct Result {
  topo::Graph graph;     // as built
  topo::Graph weighted;  // the graph the weights live on (symmetrised for a directed graph + MH/max-degree)
  bool symmetrized = false;
  bool has_spectrum = false;  // false above kMaxSpectrumNodes
  topo::Spectrum spectrum;
  unsigned period = 0;     // one-peer: tau
  double period_rho = 0;   // one-peer: rho of the product of tau consecutive rounds
};

Result compute(const Options& o) {
  std::vector<PeerId> ids(o.nodes);
  for (std::size_t i = 0; i < o.nodes; ++i) ids[i] = static_cast<PeerId>(i);
  Result r;
  try {
    r.graph = topo::buildGraph(ids, o.params);
    r.symmetrized = r.graph.directed && o.rule != topo::WeightRule::Uniform;
    r.weighted = r.symmetrized ? topo::symmetrize(r.graph) : r.graph;
    if (o.nodes > kMaxSpectrumNodes) {
      (void)topo::mixingRow(r.weighted, r.weighted.nodes.front(), o.rule, o.lazy);  // rule errors still surface
      return r;
    }
    const Eigen::MatrixXd W = topo::mixingMatrix(r.weighted, o.rule, o.lazy);
    r.spectrum = topo::analyze(W);
    r.has_spectrum = true;
    if (o.params.kind == topo::Kind::OnePeerExponential) {
      r.period = topo::exponentialTau(o.nodes);
      Eigen::MatrixXd product = Eigen::MatrixXd::Identity(W.rows(), W.cols());
      for (unsigned k = 0; k < r.period; ++k) {
        topo::TopologyParams p = o.params;
        p.round = o.params.round + k;
        topo::Graph gk = topo::buildGraph(ids, p);
        if (r.symmetrized) gk = topo::symmetrize(gk);
        product = topo::mixingMatrix(gk, o.rule, o.lazy) * product;  // X_{t+1} = W_t X_t
      }
      r.period_rho = topo::analyze(product).rho;
    }
  } catch (const ConfigError& e) {
    rethrowAsFlag(e);
  }
  return r;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> edgesOf(const topo::Graph& g) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    for (std::uint32_t j : g.out[i]) {
      if (g.directed || i < j) edges.emplace_back(i, j);
    }
  }
  return edges;
}

std::pair<std::size_t, std::size_t> degreeRange(const topo::Graph& g) {
  if (g.size() == 0) return {0, 0};
  std::size_t lo = g.in[0].size(), hi = lo;
  for (const auto& l : g.in) {
    lo = std::min(lo, l.size());
    hi = std::max(hi, l.size());
  }
  return {lo, hi};
}

std::string ruleName(topo::WeightRule r) {
  switch (r) {
    case topo::WeightRule::Metropolis: return "metropolis";
    case topo::WeightRule::MaxDegree: return "maxdegree";
    case topo::WeightRule::Uniform: return "uniform";
  }
  return "?";
}

nlohmann::json toJson(const Options& o, const Result& r) {
  using nlohmann::json;
  const auto [dmin, dmax] = degreeRange(r.graph);
  json j;
  j["topology"] = topo::kindName(o.params.kind);
  j["nodes"] = o.nodes;
  // Only the parameters that shaped this graph.
  json params = {{"seed", o.params.seed}};
  switch (o.params.kind) {
    case topo::Kind::Ring: params["extra"] = o.params.extra; break;
    case topo::Kind::Grid:
    case topo::Kind::Torus: params["rows"] = o.params.rows; break;
    case topo::Kind::RandomRegular: params["degree"] = o.params.degree; break;
    case topo::Kind::ErdosRenyi: params["prob"] = o.params.edge_prob; break;  // 0 = 2 ln(n)/n
    case topo::Kind::OnePeerExponential: params["round"] = o.params.round; break;
    case topo::Kind::EdgeList: params["edges"] = o.params.edge_file; break;
    default: break;
  }
  j["params"] = params;
  if (o.params.kind == topo::Kind::Grid || o.params.kind == topo::Kind::Torus) {
    const auto [rows, cols] = topo::gridShape(o.nodes, o.params.rows);
    j["shape"] = {rows, cols};
  }
  j["directed"] = r.graph.directed;
  j["connected"] = topo::isConnected(r.graph);
  j["degree"] = {{"min", dmin}, {"max", dmax}};  // in-degree of the graph as built
  const auto [mmin, mmax] = degreeRange(r.weighted);
  j["mixing_degree"] = {{"min", mmin}, {"max", mmax}};  // neighbours in a row of W
  j["edges"] = json::array();
  for (auto [a, b] : edgesOf(r.graph)) j["edges"].push_back({r.graph.nodes[a], r.graph.nodes[b]});
  j["weights"] = {{"rule", ruleName(o.rule)}, {"lazy", o.lazy}, {"symmetrized", r.symmetrized}};
  json rows = json::array();
  for (PeerId id : r.weighted.nodes) {
    const topo::MixingRow row = topo::mixingRow(r.weighted, id, o.rule, o.lazy);
    json nb = json::array();
    for (auto [peer, w] : row.neighbors) nb.push_back({peer, w});
    rows.push_back({{"node", id}, {"self", row.self}, {"neighbors", nb}});
  }
  j["weights"]["rows"] = rows;
  const topo::Spectrum& s = r.spectrum;
  // NaN (lambda2/lambdaN of a non-symmetric W, lambda2 of n = 1) is written as null.
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  if (r.has_spectrum) {
    j["spectrum"] = {{"lambda2", num(s.lambda2)}, {"lambdaN", num(s.lambdaN)}, {"rho", s.rho},
                     {"gap", s.gap}, {"beta", s.beta}};
  } else {
    j["spectrum"] = nullptr;
    j["spectrum_note"] = "not computed above " + std::to_string(kMaxSpectrumNodes) + " nodes (dense O(n^3))";
  }
  if (r.period > 0) j["period"] = {{"rounds", r.period}, {"rho", r.period_rho}, {"gap", 1.0 - r.period_rho}};
  return j;
}

void printText(const Options& o, const Result& r) {
  const auto [dmin, dmax] = degreeRange(r.graph);
  const auto edges = edgesOf(r.graph);
  std::printf("topology %s, %zu nodes, %s, %s\n", topo::kindName(o.params.kind).c_str(), o.nodes,
              r.graph.directed ? "directed" : "undirected", topo::isConnected(r.graph) ? "connected" : "NOT connected");
  if (o.params.kind == topo::Kind::Grid || o.params.kind == topo::Kind::Torus) {
    const auto [rows, cols] = topo::gridShape(o.nodes, o.params.rows);
    std::printf("shape %u x %u (row-major, last row may be partial)\n", rows, cols);
  }
  std::printf("degree %zu..%zu, %zu edges\n", dmin, dmax, edges.size());
  std::printf("edges:\n");
  for (auto [a, b] : edges) {
    std::printf("  %u %s %u\n", r.graph.nodes[a], r.graph.directed ? "->" : "--", r.graph.nodes[b]);
  }
  std::printf("weights %s%s%s (node: self; neighbour=weight ...):\n", ruleName(o.rule).c_str(),
              o.lazy ? ", lazy" : "", r.symmetrized ? ", on the symmetrised graph" : "");
  if (r.symmetrized) {
    const auto [mmin, mmax] = degreeRange(r.weighted);
    std::printf("symmetrised degree %zu..%zu\n", mmin, mmax);
  }
  for (PeerId id : r.weighted.nodes) {
    const topo::MixingRow row = topo::mixingRow(r.weighted, id, o.rule, o.lazy);
    std::printf("  %u: %.6f;", id, row.self);
    for (auto [peer, w] : row.neighbors) std::printf(" %u=%.6f", peer, w);
    std::printf("\n");
  }
  const topo::Spectrum& s = r.spectrum;
  if (!r.has_spectrum) {
    std::printf("spectrum: not computed above %zu nodes (dense eigen-decomposition, O(n^3))\n", kMaxSpectrumNodes);
    return;
  }
  std::printf("spectrum: lambda2 %.6f  lambdaN %.6f  rho %.6f  gap %.6f  beta %.6f\n", s.lambda2, s.lambdaN, s.rho,
              s.gap, s.beta);
  if (r.period > 0) {
    std::printf("over %u consecutive rounds: rho %.6f  gap %.6f\n", r.period, r.period_rho, 1.0 - r.period_rho);
  }
}

}  // namespace

int topo(std::vector<std::string> args) {
  Options o = parseOptions(std::move(args));
  if (o.help) {
    std::fputs(kTopoUsage, stdout);
    return 0;
  }
  validate(o);
  const Result r = compute(o);
  if (o.json) {
    std::printf("%s\n", toJson(o, r).dump().c_str());
  } else {
    printText(o, r);
  }
  return 0;
}

}  // namespace gossip::cmd
