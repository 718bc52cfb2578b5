// Edge-list topology: parsing (comments, blanks, commas, duplicates), edges to non-alive ids skipped,
// and every malformed input reported as a ConfigError naming the file and the line.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "tests/unit/topology/topo_test_util.h"

namespace gossip::topology {
namespace {

using testutil::edgeCount;
using testutil::iota;

// A file in a fresh temporary directory, removed again when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/gossip_topo_XXXXXX";
    const char* dir = mkdtemp(tmpl);
    REQUIRE(dir != nullptr);
    dir_ = dir;
    path_ = dir_ + "/edges.txt";
    std::ofstream(path_) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

Graph load(const std::string& path, const std::vector<PeerId>& alive) {
  TopologyParams p;
  p.kind = Kind::EdgeList;
  p.edge_file = path;
  return buildGraph(alive, p);
}

TEST_CASE("edge list: comments - blank lines - commas - duplicates and reversed pairs") {
  TempFile f(
      "# a small graph\n"
      "10 20\n"
      "\n"
      "20 30   # trailing comment\n"
      "  30,10\r\n"
      "20 10\n"  // duplicate of the first edge, reversed
      "\t40 10\n");
  const Graph g = load(f.path(), {10, 20, 30, 40});
  CHECK_FALSE(g.directed);
  CHECK(edgeCount(g) == 4);
  CHECK(g.out[0] == std::vector<std::uint32_t>{1, 2, 3});  // 10: 20, 30, 40
  CHECK(g.out[3] == std::vector<std::uint32_t>{0});
  CHECK(testutil::isSimpleUndirected(g));
  CHECK(isConnected(g));
}

TEST_CASE("edge list: edges touching a non-alive id are skipped") {
  TempFile f("1 2\n2 3\n3 4\n4 1\n");
  const Graph g = load(f.path(), {1, 2, 4, 99});  // 3 is dead, 99 is in no edge
  CHECK(edgeCount(g) == 2);                      // 1-2 and 4-1 survive
  CHECK(g.nodes == std::vector<PeerId>{1, 2, 4, 99});
  CHECK(g.out[3].empty());
  CHECK_FALSE(isConnected(g));
}

TEST_CASE("edge list: a hypercube file has the closed-form Metropolis spectrum") {
  // d-cube: Metropolis W = (I + A)/(d+1), eigenvalues of A are d - 2k, so rho = (d-1)/(d+1).
  for (int d : {3, 4}) {
    std::string text;
    const int n = 1 << d;
    for (int i = 0; i < n; ++i) {
      for (int b = 0; b < d; ++b) {
        if (i < (i ^ (1 << b))) text += std::to_string(i) + " " + std::to_string(i ^ (1 << b)) + "\n";
      }
    }
    TempFile f(text);
    const Graph g = load(f.path(), iota(std::size_t(n)));
    const Spectrum s = analyze(mixingMatrix(g, WeightRule::Metropolis));
    CHECK(s.rho == doctest::Approx(double(d - 1) / (d + 1)).epsilon(1e-10));
    CHECK(s.lambdaN == doctest::Approx(double(1 - d) / (d + 1)).epsilon(1e-10));
  }
}

TEST_CASE("edge list: malformed input names file and line") {
  struct Bad {
    const char* text;
    const char* line;
  };
  const Bad cases[] = {
      {"1 2\n2\n", "line 2"},                  // one id
      {"1 2\n\n# c\n1 2 3\n", "line 4"},       // three ids
      {"1 x\n", "line 1"},                     // not a number
      {"1 -2\n", "line 1"},                    // negative
      {"1 2\n3 4294967296\n", "line 2"},       // does not fit a PeerId
      {"1 2.5\n", "line 1"},                   // trailing junk
      {"5 5\n", "line 1"},                     // self loop
  };
  for (const Bad& b : cases) {
    CAPTURE(b.text);
    TempFile f(b.text);
    try {
      load(f.path(), iota(10));
      FAIL("no exception");
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      CHECK(msg.find(f.path()) != std::string::npos);
      CHECK(msg.find(b.line) != std::string::npos);
    }
  }
}

TEST_CASE("edge list: missing or unreadable file") {
  CHECK_THROWS_WITH_AS(load("/nonexistent/dir/edges.txt", iota(3)), doctest::Contains("/nonexistent/dir/edges.txt"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(load("/tmp", iota(3)), doctest::Contains("directory"), ConfigError);
  CHECK_THROWS_AS(load("", iota(3)), ConfigError);
}

}  // namespace
}  // namespace gossip::topology
