// Graph generators: structure of each kind, degrees, connectivity, determinism with respect to the
// view (order, duplicates, seed), symmetrisation, and name parsing.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "tests/unit/topology/topo_test_util.h"

namespace gossip::topology {
namespace {

using testutil::edgeCount;
using testutil::iota;
using testutil::isSimpleUndirected;
using testutil::params;

const Kind kUndirectedKinds[] = {Kind::Ring, Kind::Grid, Kind::Torus, Kind::Complete, Kind::Star, Kind::ErdosRenyi};

TEST_CASE("every kind gives a simple connected graph for n in {1 - 2 - 3 - 4 - 7 - 16}") {
  for (std::size_t n : {1, 2, 3, 4, 7, 16}) {
    for (Kind k : kUndirectedKinds) {
      CAPTURE(n);
      CAPTURE(kindName(k));
      const Graph g = buildGraph(iota(n, 100, 3), params(k));
      REQUIRE(g.size() == n);
      CHECK_FALSE(g.directed);
      CHECK(isSimpleUndirected(g));
      CHECK(isConnected(g));
    }
    const Graph e = buildGraph(iota(n), params(Kind::Exponential));
    CHECK(e.directed);
    CHECK(isConnected(e));
  }
}

TEST_CASE("diameter: the rounds a value flooded one hop per round needs to reach every node") {
  CHECK(diameter(buildGraph(iota(1), params(Kind::Ring))) == 0);
  CHECK(diameter(buildGraph(iota(6), params(Kind::Ring))) == 3);
  CHECK(diameter(buildGraph(iota(7), params(Kind::Ring))) == 3);
  CHECK(diameter(buildGraph(iota(12), params(Kind::Torus))) == 3);  // 3 x 4: 1 + 2 hops
  CHECK(diameter(buildGraph(iota(9), params(Kind::Grid))) == 4);    // 3 x 3 without wrap: corner to corner
  CHECK(diameter(buildGraph(iota(8), params(Kind::Complete))) == 1);
  CHECK(diameter(buildGraph(iota(8), params(Kind::Star))) == 2);
  CHECK(diameter(buildGraph(iota(8), params(Kind::Exponential))) == 3);  // directed: 7 = 1 + 2 + 4
  Graph split = buildGraph(iota(4), params(Kind::Ring));
  split.out[0].clear();  // node 0 sends to nobody: flooding never finishes
  CHECK(diameter(split) == 4);
}

TEST_CASE("ring: sorted-id cycle plus extra successors on each side") {
  // Ids deliberately unsorted and sparse: the ring follows sorted order 3 < 10 < 20 < 40 < 41.
  const std::vector<PeerId> ids{40, 3, 20, 41, 10};
  const Graph g = buildGraph(ids, params(Kind::Ring));
  CHECK(g.nodes == std::vector<PeerId>{3, 10, 20, 40, 41});
  for (std::uint32_t i = 0; i < 5; ++i) {
    CHECK(g.out[i] == std::vector<std::uint32_t>{std::min((i + 1) % 5, (i + 4) % 5), std::max((i + 1) % 5, (i + 4) % 5)});
  }
  TopologyParams p = params(Kind::Ring);
  p.extra = 1;
  const Graph g2 = buildGraph(iota(10), p);
  for (const auto& l : g2.out) CHECK(l.size() == 4);
  CHECK(g2.out[0] == std::vector<std::uint32_t>{1, 2, 8, 9});
  // On 5 nodes, +-1 and +-2 reach everyone: the ring saturates at the complete graph.
  const Graph g3 = buildGraph(iota(5), p);
  CHECK(edgeCount(g3) == 10);
  p.extra = 7;
  CHECK(edgeCount(buildGraph(iota(6), p)) == 15);
  CHECK(edgeCount(buildGraph(iota(2), params(Kind::Ring))) == 1);
}

TEST_CASE("grid and torus: shape - edge counts - degrees") {
  CHECK(gridShape(16, 0) == std::pair<unsigned, unsigned>{4, 4});
  CHECK(gridShape(64, 0) == std::pair<unsigned, unsigned>{8, 8});
  CHECK(gridShape(12, 0) == std::pair<unsigned, unsigned>{3, 4});
  CHECK(gridShape(7, 0) == std::pair<unsigned, unsigned>{2, 4});
  CHECK(gridShape(12, 2) == std::pair<unsigned, unsigned>{2, 6});
  CHECK(gridShape(5, 9) == std::pair<unsigned, unsigned>{5, 1});  // clamped to n rows
  CHECK(gridShape(1, 0) == std::pair<unsigned, unsigned>{1, 1});

  // r x c grid: r(c-1) horizontal + c(r-1) vertical edges; corners have degree 2.
  TopologyParams p = params(Kind::Grid);
  p.rows = 3;
  const Graph g = buildGraph(iota(15), p);  // 3 x 5
  CHECK(edgeCount(g) == 3 * 4 + 5 * 2);
  CHECK(g.out[0] == std::vector<std::uint32_t>{1, 5});
  CHECK(g.out[7] == std::vector<std::uint32_t>{2, 6, 8, 12});

  // r, c >= 3 torus is 4-regular with 2n edges.
  p.kind = Kind::Torus;
  const Graph t = buildGraph(iota(15), p);
  CHECK(edgeCount(t) == 30);
  for (const auto& l : t.out) CHECK(l.size() == 4);
  CHECK(t.out[0] == std::vector<std::uint32_t>{1, 4, 5, 10});

  // Partial last row (n = 7 on 2 x 4): row 1 holds 4,5,6; column 3 has only node 3.
  const Graph g7 = buildGraph(iota(7), params(Kind::Grid));
  CHECK(edgeCount(g7) == 3 + 2 + 3);
  CHECK(g7.out[3] == std::vector<std::uint32_t>{2});
  const Graph t7 = buildGraph(iota(7), params(Kind::Torus));
  CHECK(t7.out[4] == std::vector<std::uint32_t>{0, 5, 6});
  CHECK(isConnected(t7));
}

TEST_CASE("complete and star") {
  const Graph c = buildGraph(iota(7, 5), params(Kind::Complete));
  CHECK(edgeCount(c) == 21);
  const Graph s = buildGraph(std::vector<PeerId>{9, 4, 7, 30}, params(Kind::Star));
  CHECK(s.nodes.front() == 4);  // the smallest id is the hub
  CHECK(s.out[0] == std::vector<std::uint32_t>{1, 2, 3});
  for (std::uint32_t i = 1; i < 4; ++i) CHECK(s.out[i] == std::vector<std::uint32_t>{0});
}

TEST_CASE("exponential: i sends to i + 2^k - receives from i - 2^k") {
  for (std::size_t n : {2, 5, 8, 12, 16}) {
    CAPTURE(n);
    const Graph g = buildGraph(iota(n), params(Kind::Exponential));
    const unsigned tau = exponentialTau(n);
    CHECK((std::size_t{1} << tau) >= n);
    CHECK((std::size_t{1} << tau) < 2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      std::set<std::uint32_t> want_out, want_in;
      for (unsigned k = 0; k < tau; ++k) {
        want_out.insert(std::uint32_t((i + (1u << k)) % n));
        want_in.insert(std::uint32_t((i + n * 8 - (1u << k)) % n));
      }
      CHECK(std::vector<std::uint32_t>(want_out.begin(), want_out.end()) == g.out[i]);
      CHECK(std::vector<std::uint32_t>(want_in.begin(), want_in.end()) == g.in[i]);
      CHECK(g.out[i].size() == tau);
    }
  }
  CHECK(exponentialTau(1) == 0);
  CHECK(exponentialTau(9) == 4);
  CHECK(edgeCount(buildGraph(iota(1), params(Kind::Exponential))) == 0);
}

TEST_CASE("one-peer exponential: one hop per round - connected over a window of tau rounds") {
  for (std::size_t n : {2, 3, 7, 8, 12, 16}) {
    CAPTURE(n);
    const unsigned tau = exponentialTau(n);
    std::vector<std::set<std::uint32_t>> window(n);
    for (Round t = 5; t < 5 + tau; ++t) {
      TopologyParams p = params(Kind::OnePeerExponential);
      p.round = t;
      const Graph g = buildGraph(iota(n), p);
      const std::size_t hop = std::size_t{1} << (t % tau);
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(g.out[i].size() == 1);
        CHECK(g.out[i][0] == (i + hop) % n);
        window[i].insert(g.out[i][0]);
      }
    }
    Graph u;  // union of the window's graphs
    u.nodes = iota(n);
    u.directed = true;
    u.out.resize(n);
    u.in.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (auto j : window[i]) {
        u.out[i].push_back(j);
        u.in[j].push_back(i);
      }
    }
    for (auto& l : u.in) std::sort(l.begin(), l.end());
    CHECK(isConnected(u));
  }
}

TEST_CASE("random regular: exact degree - simple - connected - across (n - d)") {
  const std::pair<std::size_t, unsigned> cases[] = {{2, 1}, {3, 2}, {4, 3}, {7, 4}, {7, 6}, {8, 3},  {16, 4},
                                                    {16, 5}, {16, 12}, {16, 15}, {30, 2}, {64, 6}, {40, 33}};
  for (auto [n, d] : cases) {
    for (std::uint64_t seed : {1, 2, 3}) {
      CAPTURE(n);
      CAPTURE(d);
      TopologyParams p = params(Kind::RandomRegular);
      p.degree = d;
      p.seed = seed;
      const Graph g = buildGraph(iota(n, 7, 2), p);
      CHECK(isSimpleUndirected(g));
      CHECK(isConnected(g));
      for (const auto& l : g.out) CHECK(l.size() == d);
    }
  }
  TopologyParams p = params(Kind::RandomRegular);
  p.degree = 0;
  CHECK(edgeCount(buildGraph(iota(1), p)) == 0);
}

TEST_CASE("random regular: impossible parameters are ConfigErrors naming degree") {
  TopologyParams p = params(Kind::RandomRegular);
  p.degree = 3;
  CHECK_THROWS_WITH_AS(buildGraph(iota(7), p), doctest::Contains("degree"), ConfigError);  // n*d odd
  p.degree = 7;
  CHECK_THROWS_AS(buildGraph(iota(7), p), ConfigError);  // d >= n
  p.degree = 4;
  CHECK_THROWS_AS(buildGraph(iota(1), p), ConfigError);
  p.degree = 1;
  CHECK_THROWS_AS(buildGraph(iota(4), p), ConfigError);  // a perfect matching is never connected
}

TEST_CASE("Erdos-Renyi: connected - p = 1 is complete - edge density near p - bad p rejected") {
  TopologyParams p = params(Kind::ErdosRenyi);
  p.edge_prob = 1.0;
  CHECK(edgeCount(buildGraph(iota(9), p)) == 36);
  // Mean over seeds of the edge count for p = 0.5, n = 40 (connected w.p. ~1, so resampling does not
  // bias it): 780 pairs, sd of the mean over 20 samples ~ 3.
  p.edge_prob = 0.5;
  double total = 0;
  for (std::uint64_t s = 1; s <= 20; ++s) {
    p.seed = s;
    const Graph g = buildGraph(iota(40), p);
    CHECK(isConnected(g));
    total += double(edgeCount(g));
  }
  CHECK(total / 20 == doctest::Approx(390).epsilon(0.05));
  p.edge_prob = 1.5;
  CHECK_THROWS_WITH_AS(buildGraph(iota(5), p), doctest::Contains("edge_prob"), ConfigError);
  p.edge_prob = 1e-6;  // G(30, 1e-6) is essentially never connected
  CHECK_THROWS_AS(buildGraph(iota(30), p), ConfigError);
}

TEST_CASE("determinism: same view -> same graph - whatever the order or repetition of the alive list") {
  const Kind kinds[] = {Kind::RandomRegular, Kind::ErdosRenyi, Kind::Ring, Kind::Torus, Kind::Exponential};
  std::vector<PeerId> ids = iota(24, 1000, 7);
  std::vector<PeerId> shuffled = ids;
  std::reverse(shuffled.begin(), shuffled.end());
  std::rotate(shuffled.begin(), shuffled.begin() + 5, shuffled.end());
  shuffled.push_back(ids[3]);  // a duplicated id is still one member
  for (Kind k : kinds) {
    CAPTURE(kindName(k));
    TopologyParams p = params(k);
    p.seed = 42;
    const Graph a = buildGraph(ids, p);
    CHECK(buildGraph(ids, p).out == a.out);  // second call, no hidden state
    const Graph b = buildGraph(shuffled, p);
    CHECK(b.nodes == a.nodes);
    CHECK(b.out == a.out);
  }
  // The seed and the membership both matter for the random kinds.
  for (Kind k : {Kind::RandomRegular, Kind::ErdosRenyi}) {
    TopologyParams p = params(k);
    std::set<std::vector<std::vector<std::uint32_t>>> seen;
    for (std::uint64_t s = 1; s <= 4; ++s) {
      p.seed = s;
      seen.insert(buildGraph(ids, p).out);
    }
    CHECK(seen.size() >= 3);
    // Same size and seed, different members: the graph is seeded by the view, not by n alone.
    p.seed = 1;
    CHECK(buildGraph(iota(24, 2000, 7), p).out != buildGraph(ids, p).out);
  }
}

TEST_CASE("symmetrize and isConnected") {
  const Graph e = buildGraph(iota(16), params(Kind::Exponential));
  const Graph s = symmetrize(e);
  CHECK_FALSE(s.directed);
  CHECK(isSimpleUndirected(s));
  // +-1, +-2, +-4 and +8 (= -8): 7 distinct neighbours.
  for (const auto& l : s.out) CHECK(l.size() == 7);
  const Graph e12 = symmetrize(buildGraph(iota(12), params(Kind::Exponential)));
  // Out {1,2,4,8}, in {11,10,8,4}: +4/-8 and +8/-4 coincide mod 12, so 6 rather than 2 tau.
  for (const auto& l : e12.out) CHECK(l.size() == 6);

  Graph two;  // 0 -> 1 only: weakly but not strongly connected
  two.nodes = {0, 1};
  two.directed = true;
  two.out = {{1}, {}};
  two.in = {{}, {0}};
  CHECK_FALSE(isConnected(two));
  CHECK(isConnected(symmetrize(two)));
  Graph split;
  split.nodes = {0, 1, 2};
  split.out = split.in = {{1}, {0}, {}};
  CHECK_FALSE(isConnected(split));
  CHECK(split.indexOf(2) == 2);
  CHECK(split.indexOf(3) == -1);
}

TEST_CASE("kind and weight-rule names") {
  const Kind all[] = {Kind::Ring,        Kind::Grid,    Kind::Torus, Kind::RandomRegular,
                      Kind::ErdosRenyi,  Kind::Exponential, Kind::OnePeerExponential,
                      Kind::Complete,    Kind::Star,    Kind::EdgeList};
  std::set<std::string> names;
  for (Kind k : all) {
    CHECK(parseKind(kindName(k)) == k);
    names.insert(kindName(k));
  }
  CHECK(names.size() == 10);
  CHECK(parseKind("Random_Regular") == Kind::RandomRegular);
  CHECK(parseKind("edges") == Kind::EdgeList);
  CHECK_THROWS_WITH_AS(parseKind("hypercube"), doctest::Contains("hypercube"), ConfigError);
  CHECK(parseWeightRule("metropolis") == WeightRule::Metropolis);
  CHECK(parseWeightRule("max_degree") == WeightRule::MaxDegree);
  CHECK(parseWeightRule("uniform") == WeightRule::Uniform);
  CHECK_THROWS_AS(parseWeightRule("equal"), ConfigError);
}

}  // namespace
}  // namespace gossip::topology
