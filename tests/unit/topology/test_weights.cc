// Mixing weights and spectral analysis: the ALGORITHMS.md §2.4 reference table, closed-form spectra
// (ring, torus, hypercube), exponential-graph numbers (§2.5), stochasticity and symmetry across a
// sweep of sizes, and agreement between mixingRow, mixingMatrix and the Appendix B oracles.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "tests/unit/topology/topo_test_util.h"

namespace gossip::topology {
namespace {

using testutil::iota;
using testutil::params;

constexpr double kTol = 1e-12;
const double kPi = std::numbers::pi;

Spectrum ringSpectrum(std::size_t n) {
  return analyze(mixingMatrix(buildGraph(iota(n, 11, 5), params(Kind::Ring)), WeightRule::Metropolis));
}

TEST_CASE("ALGORITHMS.md §2.4 ring table (Metropolis ring = w 1/3)") {
  struct Row {
    int n;
    double lambda2, lambdaN, rho, gap, beta;
  };
  const Row table[] = {{8, 0.8047, -0.3333, 0.8047, 0.1953, 1.3333},
                       {9, 0.8440, -0.2931, 0.8440, 0.1560, 1.2931},
                       {16, 0.9493, -0.3333, 0.9493, 0.0507, 1.3333},
                       {32, 0.9872, -0.3333, 0.9872, 0.0128, 1.3333}};
  for (const Row& r : table) {
    CAPTURE(r.n);
    const Eigen::MatrixXd W = mixingMatrix(buildGraph(iota(r.n), params(Kind::Ring)), WeightRule::Metropolis);
    CHECK((W - testutil::ringThirds(r.n)).cwiseAbs().maxCoeff() < kTol);
    const Spectrum s = analyze(W);
    CHECK(std::abs(s.lambda2 - r.lambda2) < 6e-5);
    CHECK(std::abs(s.lambdaN - r.lambdaN) < 6e-5);
    CHECK(std::abs(s.rho - r.rho) < 6e-5);
    CHECK(std::abs(s.gap - r.gap) < 6e-5);
    CHECK(std::abs(s.beta - r.beta) < 6e-5);
  }
  const Spectrum s25 = ringSpectrum(25);
  CHECK(std::abs(s25.rho - 0.9791) < 6e-5);
  CHECK(std::abs(s25.beta - 1.328) < 6e-4);
}

TEST_CASE("ring spectrum matches the circulant closed form (1 + 2cos(2 pi k/n))/3") {
  for (std::size_t n : {3, 4, 5, 7, 10, 16, 33}) {
    CAPTURE(n);
    double l2 = -1, ln = 2;
    for (std::size_t k = 1; k < n; ++k) {
      const double ev = (1 + 2 * std::cos(2 * kPi * double(k) / double(n))) / 3;
      l2 = std::max(l2, ev);
      ln = std::min(ln, ev);
    }
    const Spectrum s = ringSpectrum(n);
    CHECK(s.lambda2 == doctest::Approx(l2).epsilon(1e-10));
    CHECK(s.lambdaN == doctest::Approx(ln).epsilon(1e-10));
    CHECK(s.rho == doctest::Approx(std::max(std::abs(l2), std::abs(ln))).epsilon(1e-10));
    CHECK(s.beta == doctest::Approx(1 - ln).epsilon(1e-10));
    CHECK(s.gap == doctest::Approx(1 - s.rho).epsilon(1e-12));
  }
}

TEST_CASE("torus 4x4 and 8x8: Metropolis W = (I + A)/5 with eigenvalues (1 + 2cos a + 2cos b)/5") {
  for (int side : {4, 8}) {
    CAPTURE(side);
    double l2 = -1;
    for (int a = 0; a < side; ++a) {
      for (int b = 0; b < side; ++b) {
        if (a == 0 && b == 0) continue;
        l2 = std::max(l2, (1 + 2 * std::cos(2 * kPi * a / side) + 2 * std::cos(2 * kPi * b / side)) / 5);
      }
    }
    const Spectrum s = analyze(mixingMatrix(buildGraph(iota(side * side), params(Kind::Torus)), WeightRule::Metropolis));
    CHECK(s.lambda2 == doctest::Approx(l2).epsilon(1e-10));
    CHECK(s.lambdaN == doctest::Approx(-0.6).epsilon(1e-10));  // a = b = side/2: (1 - 2 - 2)/5
  }
}

TEST_CASE("static exponential graph: uniform 1/(tau+1) weights - rho from §2.5") {
  const std::pair<int, double> expected[] = {{8, 0.5}, {16, 0.6}, {32, 2.0 / 3.0}, {12, 0.6}};
  for (auto [n, rho] : expected) {
    CAPTURE(n);
    const Graph g = buildGraph(iota(n), params(Kind::Exponential));
    const Eigen::MatrixXd W = mixingMatrix(g, WeightRule::Uniform);
    const double w = 1.0 / (exponentialTau(n) + 1);
    CHECK(W.diagonal().isConstant(w, 1e-15));
    CHECK((W.rowwise().sum().array() - 1).abs().maxCoeff() < kTol);
    CHECK((W.colwise().sum().array() - 1).abs().maxCoeff() < kTol);
    CHECK((W - W.transpose()).cwiseAbs().maxCoeff() > 0.1);  // directed: not symmetric
    const Spectrum s = analyze(W);
    CHECK(s.rho == doctest::Approx(rho).epsilon(1e-9));
    CHECK(std::isnan(s.lambda2));
    CHECK(std::isnan(s.lambdaN));
    // Transposing does not change a 2-norm: the sender-side (Appendix B) orientation agrees.
    CHECK(analyze(Eigen::MatrixXd(W.transpose())).rho == doctest::Approx(s.rho).epsilon(1e-12));
  }
  const Spectrum s9 = analyze(mixingMatrix(buildGraph(iota(9), params(Kind::Exponential)), WeightRule::Uniform));
  CHECK(std::abs(s9.rho - 0.44) < 0.01);
}

TEST_CASE("one-peer exponential: tau consecutive rounds multiply to 11^T/n exactly iff n = 2^m") {
  for (int n : {8, 16, 12}) {
    CAPTURE(n);
    const unsigned tau = exponentialTau(std::size_t(n));
    const Eigen::MatrixXd J = Eigen::MatrixXd::Constant(n, n, 1.0 / n);
    for (Round start : {Round(0), Round(3)}) {
      Eigen::MatrixXd P = Eigen::MatrixXd::Identity(n, n);
      for (Round t = start; t < start + tau; ++t) {
        TopologyParams p = params(Kind::OnePeerExponential);
        p.round = t;
        const Eigen::MatrixXd Wt = mixingMatrix(buildGraph(iota(n), p), WeightRule::Uniform);
        CHECK((Wt - testutil::onePeerOracle(n, int(t))).cwiseAbs().maxCoeff() < kTol);
        P = Wt * P;
      }
      const double err = (P - J).cwiseAbs().maxCoeff();
      if (n == 12) {
        CHECK(err > 1e-3);
      } else {
        CHECK(err < kTol);
      }
    }
  }
}

TEST_CASE("stochasticity sweep: rows and columns sum to 1 - non-negative - symmetric where claimed") {
  struct Case {
    Kind kind;
    WeightRule rule;
    bool symmetric;
  };
  const Case cases[] = {
      {Kind::Ring, WeightRule::Metropolis, true},       {Kind::Ring, WeightRule::MaxDegree, true},
      {Kind::Ring, WeightRule::Uniform, true},          {Kind::Grid, WeightRule::Metropolis, true},
      {Kind::Grid, WeightRule::MaxDegree, true},        {Kind::Torus, WeightRule::Metropolis, true},
      {Kind::Star, WeightRule::Metropolis, true},       {Kind::Star, WeightRule::MaxDegree, true},
      {Kind::Complete, WeightRule::Uniform, true},      {Kind::ErdosRenyi, WeightRule::Metropolis, true},
      {Kind::ErdosRenyi, WeightRule::MaxDegree, true},  {Kind::Exponential, WeightRule::Uniform, false},
      {Kind::OnePeerExponential, WeightRule::Uniform, false},
  };
  for (std::size_t n : {1, 2, 3, 4, 7, 16}) {
    for (const Case& c : cases) {
      for (bool lazy : {false, true}) {
        CAPTURE(n);
        CAPTURE(kindName(c.kind));
        CAPTURE(int(c.rule));
        CAPTURE(lazy);
        const Graph g = buildGraph(iota(n, 50, 4), params(c.kind));
        const Eigen::MatrixXd W = mixingMatrix(g, c.rule, lazy);
        REQUIRE(W.rows() == Eigen::Index(n));
        CHECK((W.rowwise().sum().array() - 1).abs().maxCoeff() < kTol);
        CHECK((W.colwise().sum().array() - 1).abs().maxCoeff() < kTol);
        CHECK(W.minCoeff() >= 0.0);
        CHECK(W.diagonal().minCoeff() > 0.0);
        if (c.symmetric) CHECK((W - W.transpose()).cwiseAbs().maxCoeff() < kTol);
        // Non-zero pattern = the graph (plus the diagonal).
        const Eigen::MatrixXd A = testutil::adjacency(g);
        for (Eigen::Index i = 0; i < W.rows(); ++i) {
          for (Eigen::Index j = 0; j < W.cols(); ++j) {
            if (i != j) CHECK((W(i, j) > 0) == (A(i, j) > 0));
          }
        }
        const Spectrum s = analyze(W);
        CHECK(s.gap == doctest::Approx(1 - s.rho));
        if (n == 1) {
          CHECK(W(0, 0) == 1.0);
          CHECK(s.rho == doctest::Approx(0.0));
          CHECK(s.beta == doctest::Approx(0.0));
        }
        if (lazy && c.symmetric) CHECK(s.lambdaN >= -1e-12);
      }
    }
  }
}

TEST_CASE("weights equal the Appendix B oracles - lazy is (I + W)/2") {
  TopologyParams p = params(Kind::ErdosRenyi);
  p.edge_prob = 0.3;
  p.seed = 9;
  for (const Graph& g : {buildGraph(iota(13), p), buildGraph(iota(10), params(Kind::Grid)),
                         buildGraph(iota(6), params(Kind::Star))}) {
    const Eigen::MatrixXd A = testutil::adjacency(g);
    const Eigen::MatrixXd Wm = mixingMatrix(g, WeightRule::Metropolis);
    CHECK((Wm - testutil::metropolisOracle(A)).cwiseAbs().maxCoeff() < kTol);
    CHECK((mixingMatrix(g, WeightRule::MaxDegree) - testutil::maxDegreeOracle(A)).cwiseAbs().maxCoeff() < kTol);
    const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(Wm.rows(), Wm.cols());
    CHECK((mixingMatrix(g, WeightRule::Metropolis, true) - 0.5 * (I + Wm)).cwiseAbs().maxCoeff() < kTol);
  }
}

TEST_CASE("mixingRow (what one node computes) agrees with mixingMatrix") {
  const std::vector<PeerId> ids{900, 17, 4, 250, 61, 33, 1000, 5, 77};  // sparse, unsorted
  for (Kind k : {Kind::Ring, Kind::Grid, Kind::Torus, Kind::Star, Kind::RandomRegular, Kind::ErdosRenyi,
                 Kind::Exponential, Kind::OnePeerExponential, Kind::Complete}) {
    TopologyParams p = params(k);
    p.degree = 4;
    p.round = 2;
    const Graph g = buildGraph(ids, p);
    const bool directed = g.directed;
    for (WeightRule rule : {WeightRule::Metropolis, WeightRule::MaxDegree, WeightRule::Uniform}) {
      const bool regular = k == Kind::Ring || k == Kind::RandomRegular || k == Kind::Complete || directed;
      if (directed && rule != WeightRule::Uniform) continue;
      if (rule == WeightRule::Uniform && !regular) continue;
      for (bool lazy : {false, true}) {
        CAPTURE(kindName(k));
        const Eigen::MatrixXd W = mixingMatrix(g, rule, lazy);
        for (std::size_t i = 0; i < g.size(); ++i) {
          const MixingRow row = mixingRow(g, g.nodes[i], rule, lazy);
          CHECK(row.self == doctest::Approx(W(Eigen::Index(i), Eigen::Index(i))).epsilon(1e-15));
          double sum = row.self;
          PeerId prev = 0;
          for (std::size_t t = 0; t < row.neighbors.size(); ++t) {
            const auto [id, w] = row.neighbors[t];
            if (t > 0) CHECK(id > prev);  // sorted by id
            prev = id;
            const auto j = g.indexOf(id);
            REQUIRE(j >= 0);
            CHECK(w == W(Eigen::Index(i), Eigen::Index(j)));
            sum += w;
          }
          CHECK(sum == doctest::Approx(W.row(Eigen::Index(i)).sum()).epsilon(1e-14));
          CHECK(row.neighbors.size() == std::size_t((W.row(Eigen::Index(i)).array() > 0).count()) - 1);
        }
      }
    }
  }
}

TEST_CASE("n = 1 and n = 2") {
  for (Kind k : {Kind::Ring, Kind::Grid, Kind::Torus, Kind::Complete, Kind::Star, Kind::ErdosRenyi}) {
    const Graph g1 = buildGraph(iota(1, 5), params(k));
    const Eigen::MatrixXd W1 = mixingMatrix(g1, WeightRule::Metropolis);
    CHECK(W1.rows() == 1);
    CHECK(W1(0, 0) == 1.0);
    const Spectrum s1 = analyze(W1);
    CHECK(std::isnan(s1.lambda2));
    CHECK(s1.lambdaN == doctest::Approx(1.0));
    CHECK(s1.gap == doctest::Approx(1.0));
    const MixingRow r1 = mixingRow(g1, 5, WeightRule::Metropolis);
    CHECK(r1.self == 1.0);
    CHECK(r1.neighbors.empty());

    // Two nodes and one edge: W = 11^T/2, mixes in one step.
    const Graph g2 = buildGraph(std::vector<PeerId>{8, 3}, params(k));
    const Spectrum s2 = analyze(mixingMatrix(g2, WeightRule::Metropolis));
    CHECK(s2.rho == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(s2.lambda2 == doctest::Approx(0.0).scale(1));
    CHECK(s2.lambdaN == doctest::Approx(0.0).scale(1));
    CHECK(s2.beta == doctest::Approx(1.0));
    const MixingRow r2 = mixingRow(g2, 8, WeightRule::Metropolis);
    CHECK(r2.self == 0.5);
    REQUIRE(r2.neighbors.size() == 1);
    CHECK(r2.neighbors[0] == std::pair<PeerId, double>{3, 0.5});
  }
}

TEST_CASE("weight rules that would not be doubly stochastic are refused") {
  const Graph e = buildGraph(iota(8), params(Kind::Exponential));
  CHECK_THROWS_WITH_AS(mixingMatrix(e, WeightRule::Metropolis), doctest::Contains("weights"), ConfigError);
  CHECK_THROWS_AS(mixingRow(e, 0, WeightRule::MaxDegree), ConfigError);
  // The symmetrised exponential graph is undirected, so Metropolis applies (ALGORITHMS.md §2.5 pitfall).
  const Eigen::MatrixXd Ws = mixingMatrix(symmetrize(e), WeightRule::Metropolis);
  CHECK((Ws - Ws.transpose()).cwiseAbs().maxCoeff() < kTol);
  const Graph star = buildGraph(iota(5), params(Kind::Star));
  CHECK_THROWS_WITH_AS(mixingMatrix(star, WeightRule::Uniform), doctest::Contains("regular"), ConfigError);
  CHECK_THROWS_AS(mixingRow(star, 99, WeightRule::Metropolis), Error);  // not a member
  CHECK_THROWS_AS(analyze(Eigen::MatrixXd(2, 3)), ConfigError);
}

TEST_CASE("analyze on hand-made matrices") {
  // Non-symmetric but doubly stochastic 3-cycle permutation mix: W = (I + P)/2, normal, so
  // ||W - J|| = max_{k != 0} |1 + e^{2 pi i k/3}|/2 = cos(pi/3) = 0.5 and ||I - W|| = |1 - e^{..}|/2.
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(3, 3);
  for (int i = 0; i < 3; ++i) {
    W(i, i) = 0.5;
    W(i, (i + 1) % 3) = 0.5;
  }
  const Spectrum s = analyze(W);
  CHECK(s.rho == doctest::Approx(0.5).epsilon(1e-12));
  CHECK(s.beta == doctest::Approx(std::sqrt(3.0) / 2).epsilon(1e-12));
  // Identity: nothing mixes.
  const Spectrum si = analyze(Eigen::MatrixXd::Identity(4, 4));
  CHECK(si.rho == doctest::Approx(1.0));
  CHECK(si.gap == doctest::Approx(0.0).scale(1));
  CHECK(si.beta == doctest::Approx(0.0).scale(1));
}

}  // namespace
}  // namespace gossip::topology
