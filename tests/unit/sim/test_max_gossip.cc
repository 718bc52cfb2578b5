// agreeByMaxGossip (sim/max_gossip.h): every node ends with the global maximum, in as many rounds as the
// farthest node is from the largest value, on undirected and directed graphs.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "sim/max_gossip.h"

using namespace gossip;

namespace {
topology::Graph graph(topology::Kind kind, std::uint32_t n) {
  std::vector<PeerId> ids(n);
  std::iota(ids.begin(), ids.end(), PeerId{0});
  topology::TopologyParams p;
  p.kind = kind;
  return topology::buildGraph(ids, p);
}
double larger(double a, double b) { return a > b ? a : b; }
}  // namespace

TEST_CASE("max-gossip on a ring takes the distance to the largest value - then all agree") {
  const auto g = graph(topology::Kind::Ring, 9);
  std::vector<double> v(9, 1.0);
  v[0] = 5.0;  // the farthest nodes (4 and 5) are 4 hops away
  v[3] = 2.0;
  CHECK(sim::agreeByMaxGossip(g, v, larger) == 4);
  for (double x : v) CHECK(x == 5.0);
  CHECK(sim::agreeByMaxGossip(g, v, larger) == 0);  // already agreed: nothing changes
}

TEST_CASE("max-gossip on a directed exponential graph reads in-neighbours only") {
  const auto g = graph(topology::Kind::Exponential, 8);
  REQUIRE(g.directed);
  std::vector<double> v(8, 0.0);
  v[5] = 3.0;
  const unsigned rounds = sim::agreeByMaxGossip(g, v, larger);
  for (double x : v) CHECK(x == 3.0);
  CHECK(rounds >= 1);
  CHECK(rounds <= 3);  // log2(8) hops reach every node
}
