// Models: analytic gradients against central finite differences, loss values against naive per-sample
// loops written here from the formulas, parameter counts, descent, and factory validation.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "tests/support/precision.h"
#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/feedforward.h"
#include "training/linear_models.h"
#include "training/model_factory.h"

using namespace gossip;
using namespace gossip::training;
using testing::randomDataset;
using testing::randomVec;

namespace {

double relErr(const Vec& a, const Vec& b) { return (a - b).norm() / std::max<double>(1e-12, b.norm()); }

Vec finiteDiffGrad(const Model& m, const Vec& x, const Dataset& d, std::span<const std::uint32_t> rows) {
  const double h = gossip::precision::tol(1e-6, 1e-3);
  Vec g(x.size()), scratch;
  Vec xp = x;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    xp[i] = x[i] + h;
    const double fp = m.lossAndGrad(xp, d, rows, scratch);
    xp[i] = x[i] - h;
    const double fm = m.lossAndGrad(xp, d, rows, scratch);
    xp[i] = x[i];
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

std::vector<std::uint32_t> someRows(std::size_t n) {
  std::vector<std::uint32_t> r;
  for (std::uint32_t i = 0; i < n; i += 2) r.push_back(i);
  r.push_back(1);
  r.push_back(1);  // a repeated row counts twice in the mean
  return r;
}

double naiveLogistic(const Vec& x, const Dataset& d, std::span<const std::uint32_t> rows, bool bias, double l2) {
  double s = 0;
  for (auto r : rows) {
    double z = bias ? x[x.size() - 1] : 0.0;
    for (std::size_t j = 0; j < d.features(); ++j) z += x[static_cast<Eigen::Index>(j)] * d.X(r, static_cast<Eigen::Index>(j));
    const double p = 1 / (1 + std::exp(-z));
    s += d.y[r] == 1 ? -std::log(p) : -std::log(1 - p);
  }
  return s / static_cast<double>(rows.size()) + 0.5 * l2 * x.squaredNorm();
}

// One-hidden-layer MLP written from the documented layout: W1 (h x f) row-major, b1, W2 (c x h), b2.
double naiveMlp1(const Vec& x, const Dataset& d, std::span<const std::uint32_t> rows, int f, int h, int c) {
  double s = 0;
  for (auto r : rows) {
    std::vector<double> hid(static_cast<std::size_t>(h)), out(static_cast<std::size_t>(c));
    for (int k = 0; k < h; ++k) {
      double z = x[f * h + k];
      for (int j = 0; j < f; ++j) z += x[k * f + j] * d.X(r, j);
      hid[static_cast<std::size_t>(k)] = std::max(0.0, z);
    }
    const int off = f * h + h;
    for (int k = 0; k < c; ++k) {
      double z = x[off + c * h + k];
      for (int j = 0; j < h; ++j) z += x[off + k * h + j] * hid[static_cast<std::size_t>(j)];
      out[static_cast<std::size_t>(k)] = z;
    }
    double se = 0;
    for (double z : out) se += std::exp(z);
    s += std::log(se) - out[static_cast<std::size_t>(d.y[r])];
  }
  return s / static_cast<double>(rows.size());
}

struct Case {
  const char* label;
  ModelSpec spec;
  int classes;
};

std::vector<Case> allCases() {
  std::vector<Case> c;
  c.push_back({"logistic", {"logistic", {}, 0.0, 0.05, true}, 2});
  c.push_back({"logistic-nobias", {"logistic", {}, 0.1, 0.05, false}, 2});
  c.push_back({"least_squares", {"least_squares", {}, 0.0, 0.05, true}, 0});
  c.push_back({"softmax", {"softmax", {}, 0.0, 0.05, true}, 4});
  c.push_back({"mlp1", {"mlp", {6}, 0.0, 0.05, true}, 3});
  c.push_back({"mlp2", {"mlp", {5, 4}, 0.0, 0.05, true}, 3});
  return c;
}

}  // namespace

TEST_CASE("every model's gradient matches central finite differences (with l2)") {
  for (const Case& c : allCases()) {
    CAPTURE(c.label);
    const Dataset d = randomDataset(40, 7, c.classes, 11);
    auto m = makeModel(c.spec, d.features(), c.classes);
    Rng rng(5);
    Vec x;
    m->init(x, rng);
    x += randomVec(m->dim(), 0.3, 17);  // off the init point, biases non-zero
    const auto rows = someRows(d.samples());
    Vec g;
    m->lossAndGrad(x, d, rows, g);
    REQUIRE(static_cast<std::size_t>(g.size()) == m->dim());
    CHECK(relErr(g, finiteDiffGrad(*m, x, d, rows)) < gossip::precision::tol(1e-6, 5e-3));
    CHECK(m->l2() == c.spec.l2);
    CHECK(m->l1() == c.spec.l1);
  }
}

TEST_CASE("loss values agree with per-sample formulas") {
  const Dataset d = randomDataset(30, 5, 2, 3);
  const auto rows = someRows(d.samples());
  Vec g;
  SUBCASE("logistic at zero is log 2, elsewhere the naive sum") {
    LogisticModel m(5, true, 0.0, 0.2);
    CHECK(m.lossAndGrad(Vec::Zero(6), d, rows, g) == doctest::Approx(std::log(2.0)).epsilon(1e-14));
    const Vec x = randomVec(6, 0.7, 4);
    CHECK(m.lossAndGrad(x, d, rows, g) == doctest::Approx(naiveLogistic(x, d, rows, true, 0.2)).epsilon(gossip::precision::tol(1e-12, 1e-5)));
    LogisticModel nb(5, false, 0.0, 0.0);
    const Vec x5 = x.head(5);
    CHECK(nb.lossAndGrad(x5, d, rows, g) == doctest::Approx(naiveLogistic(x5, d, rows, false, 0.0)).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  }
  SUBCASE("softmax at zero is log C") {
    const Dataset d4 = randomDataset(30, 5, 4, 8);
    FeedForwardModel m(5, 4, {}, 0.0, 0.0);
    CHECK(m.dim() == 24u);
    CHECK(m.lossAndGrad(Vec::Zero(24), d4, rows, g) == doctest::Approx(std::log(4.0)).epsilon(1e-14));
  }
  SUBCASE("MLP forward follows the documented layout") {
    const Dataset d3 = randomDataset(30, 5, 3, 9);
    FeedForwardModel m(5, 3, {4}, 0.0, 0.0);
    CHECK(m.dim() == static_cast<std::size_t>(5 * 4 + 4 + 4 * 3 + 3));
    const Vec x = randomVec(m.dim(), 0.5, 10);
    CHECK(m.lossAndGrad(x, d3, rows, g) == doctest::Approx(naiveMlp1(x, d3, rows, 5, 4, 3)).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  }
  SUBCASE("least squares is half the mean squared residual") {
    Dataset r = randomDataset(30, 5, 0, 12);
    LeastSquaresModel m(5, true, 0.0, 0.0);
    const Vec x = randomVec(6, 1.0, 13);
    double s = 0;
    for (auto i : rows) {
      const double z = r.X.row(i).cast<double>().dot(x.head(5).cast<double>().transpose()) + x[5] - r.targets[i];
      s += 0.5 * z * z;
    }
    CHECK(m.lossAndGrad(x, r, rows, g) == doctest::Approx(s / static_cast<double>(rows.size())).epsilon(gossip::precision::tol(1e-12, 1e-5)));
    CHECK(std::isnan(m.accuracy(x, r)));
  }
}

TEST_CASE("batch gradient is the mean of per-sample gradients - across chunk boundaries") {
  // 600 rows span three internal chunks of 256.
  for (const Case& c : allCases()) {
    CAPTURE(c.label);
    const Dataset d = randomDataset(600, 6, c.classes, 21);
    auto m = makeModel(c.spec, d.features(), c.classes);
    const Vec x = randomVec(m->dim(), 0.3, 22);
    std::vector<std::uint32_t> rows(600);
    std::iota(rows.begin(), rows.end(), 0u);
    Vec g, gi, sum = Vec::Zero(static_cast<Eigen::Index>(m->dim()));
    const double loss = m->lossAndGrad(x, d, rows, g);
    double lsum = 0;
    for (std::uint32_t r : rows) {
      lsum += m->lossAndGrad(x, d, std::span<const std::uint32_t>(&r, 1), gi);
      sum += gi;
    }
    CHECK(relErr(g, sum / 600.0) < gossip::precision::tol(1e-12, 1e-5));
    CHECK(loss == doctest::Approx(lsum / 600.0).epsilon(gossip::precision::tol(1e-12, 1e-5)));
    CHECK(m->loss(x, d) == doctest::Approx(loss).epsilon(1e-12));
  }
}

TEST_CASE("full-gradient descent decreases every model's loss") {
  for (const Case& c : allCases()) {
    CAPTURE(c.label);
    const Dataset d = randomDataset(200, 8, c.classes, 31);
    auto m = makeModel(c.spec, d.features(), c.classes);
    Rng rng(1);
    Vec x, g;
    m->init(x, rng);
    std::vector<std::uint32_t> rows(d.samples());
    std::iota(rows.begin(), rows.end(), 0u);
    const double first = m->lossAndGrad(x, d, rows, g);
    double prev = first;
    for (int it = 0; it < 100; ++it) {
      x -= 0.05 * g;
      const double cur = m->lossAndGrad(x, d, rows, g);
      CHECK(cur <= prev + 1e-12);
      prev = cur;
    }
    CHECK(prev < first - 1e-3);
  }
}

TEST_CASE("accuracy agrees with a direct prediction count") {
  const Dataset d = randomDataset(300, 4, 3, 41);
  FeedForwardModel m(4, 3, {}, 0.0, 0.0);
  const Vec x = randomVec(m.dim(), 1.0, 42);
  int correct = 0;
  for (Eigen::Index r = 0; r < 300; ++r) {
    Eigen::Vector3d z;
    for (int k = 0; k < 3; ++k) z[k] = x.segment(k * 4, 4).cast<double>().dot(d.X.row(r).cast<double>().transpose()) + x[12 + k];
    Eigen::Index best;
    z.maxCoeff(&best);
    correct += best == d.y[static_cast<std::size_t>(r)];
  }
  CHECK(m.accuracy(x, d) == doctest::Approx(correct / 300.0));

  const Dataset b = randomDataset(300, 4, 2, 43);
  LogisticModel lm(4, true, 0, 0);
  const Vec w = randomVec(5, 1.0, 44);
  int ok = 0;
  for (Eigen::Index r = 0; r < 300; ++r)
    ok += (b.X.row(r).cast<double>().dot(w.head(4).cast<double>().transpose()) + w[4] > 0) == (b.y[static_cast<std::size_t>(r)] == 1);
  CHECK(lm.accuracy(w, b) == doctest::Approx(ok / 300.0));
}

TEST_CASE("parameter counts and MLP initialization") {
  CHECK(makeModel({"softmax", {}, 0, 0, true}, 784, 10)->dim() == 7850u);
  auto mlp = makeModel({"mlp", {128}, 0, 0, true}, 784, 10);
  CHECK(mlp->dim() == 101770u);
  CHECK(mlp->name() == "mlp");
  Rng r1(9), r2(9);
  Vec a, b;
  mlp->init(a, r1);
  mlp->init(b, r2);
  CHECK(a == b);
  // He-normal first layer: variance 2 / fan_in over 100k draws.
  const Vec w1 = a.head(784 * 128);
  const double var = w1.squaredNorm() / static_cast<double>(w1.size());
  CHECK(var == doctest::Approx(2.0 / 784).epsilon(0.02));
  CHECK(a.segment(784 * 128, 128).isZero());  // biases
  // Glorot-uniform output layer stays within its limit.
  const double lim = std::sqrt(6.0 / (128 + 10));
  CHECK(a.segment(784 * 128 + 128, 1280).cwiseAbs().maxCoeff() <= lim);
}

TEST_CASE("model factory rejects bad specs naming the field") {
  auto expectField = [](const ModelSpec& s, std::size_t f, int c, const char* field) {
    try {
      makeModel(s, f, c);
      FAIL("no ConfigError for ", field);
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(field) != std::string::npos);
    }
  };
  expectField({"svm", {}, 0, 0, true}, 4, 2, "model.kind");
  expectField({"logistic", {}, 0, 0, true}, 4, 10, "model.kind");
  expectField({"least_squares", {}, 0, 0, true}, 4, 2, "model.kind");
  expectField({"mlp", {}, 0, 0, true}, 4, 3, "model.hidden");
  expectField({"mlp", {4, 4, 4}, 0, 0, true}, 4, 3, "model.hidden");
  expectField({"mlp", {0}, 0, 0, true}, 4, 3, "model.hidden");
  expectField({"softmax", {3}, 0, 0, true}, 4, 3, "model.hidden");
  expectField({"logistic", {}, -1, 0, true}, 4, 2, "model.l1");
  expectField({"logistic", {}, 0, std::nan(""), true}, 4, 2, "model.l2");
}

TEST_CASE("a label outside the class range is a DataError - not a memory error") {
  Dataset d = randomDataset(10, 3, 3, 1);
  d.y[4] = 7;
  FeedForwardModel m(3, 3, {}, 0, 0);
  Vec g;
  std::vector<std::uint32_t> rows = {3, 4};
  CHECK_THROWS_AS(m.lossAndGrad(Vec::Zero(12), d, rows, g), DataError);
  std::vector<std::uint32_t> bad = {10};
  CHECK_THROWS_AS(m.lossAndGrad(Vec::Zero(12), d, bad, g), Error);
}
