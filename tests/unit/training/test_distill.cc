// Codistillation's loss (Model::distillLossAndGrad): the value against the formula computed here per sample,
// the gradient against central finite differences of that value (softmax and MLP, across a chunk boundary),
// lossAndGrad bit for bit without teachers, and a clear refusal from models without a softmax output.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/support/precision.h"
#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/feedforward.h"
#include "training/linear_models.h"

using namespace gossip;
using namespace gossip::training;
using testing::randomDataset;
using testing::randomVec;

namespace {

double distill(const Model& m, const Vec& x, const Dataset& d, std::span<const std::uint32_t> rows,
               std::span<const Vec* const> teachers, double weight, Vec& g) {
  return m.distillLossAndGrad(x, d, rows, teachers, weight, g);
}

// Softmax regression's class probabilities of sample r, written from the layout in feedforward.h
// (W classes x features row-major, then b).
Vec softmaxProbs(const Vec& x, const Dataset& d, std::uint32_t r, int classes) {
  const auto f = static_cast<Eigen::Index>(d.features());
  Vec z(classes);
  for (int c = 0; c < classes; ++c) {
    double s = x[f * classes + c];
    for (Eigen::Index k = 0; k < f; ++k) s += x[c * f + k] * static_cast<double>(d.X(r, k));
    z[c] = s;
  }
  const double m = z.maxCoeff();
  Vec p = (z.array() - m).exp();
  return p / p.sum();
}

}  // namespace

TEST_CASE("distillation loss is the mean of CE(y - p) + weight KL(mean teacher p || p) plus l2 - per the formula") {
  const int classes = 4;
  const Dataset d = randomDataset(9, 3, classes, 5);
  const double l2 = 0.01, weight = 0.7;
  FeedForwardModel m(3, classes, {}, 0.0, l2);
  const Vec x = randomVec(m.dim(), 0.5, 1), t1 = randomVec(m.dim(), 0.5, 2), t2 = randomVec(m.dim(), 0.5, 3);
  const std::vector<const Vec*> teachers{&t1, &t2};
  const std::vector<std::uint32_t> rows{0, 2, 3, 7, 8};
  Vec g;
  const double got = distill(m, x, d, rows, teachers, weight, g);

  double want = 0.0;
  Vec wantGrad = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
  for (std::uint32_t r : rows) {
    const Vec p = softmaxProbs(x, d, r, classes);
    const Vec q = 0.5 * (softmaxProbs(t1, d, r, classes) + softmaxProbs(t2, d, r, classes));
    const int y = d.y[r];
    double kl = 0.0;
    for (int c = 0; c < classes; ++c) kl += q[c] * std::log(q[c] / p[c]);
    want += -std::log(p[y]) + weight * kl;
    Vec dz = (1.0 + weight) * p - weight * q;  // d/dz of CE + weight KL
    dz[y] -= 1.0;
    for (int c = 0; c < classes; ++c) {
      for (Eigen::Index k = 0; k < 3; ++k) wantGrad[c * 3 + k] += dz[c] * static_cast<double>(d.X(r, k));
      wantGrad[3 * classes + c] += dz[c];
    }
  }
  const double n = static_cast<double>(rows.size());
  want = want / n + 0.5 * l2 * x.squaredNorm();
  wantGrad = wantGrad / n + l2 * x;
  CHECK(got == doctest::Approx(want).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  CHECK((g - wantGrad).norm() <= gossip::precision::tol(1e-12, 1e-5) * wantGrad.norm());
}

TEST_CASE("distillation gradient matches central finite differences (softmax and mlp - across a chunk boundary)") {
  const Dataset d = randomDataset(300, 4, 3, 11);
  std::vector<std::uint32_t> rows(300);
  for (std::uint32_t i = 0; i < 300; ++i) rows[i] = i;  // 300 rows: two chunks of the model's 256
  for (const auto& hidden : {std::vector<int>{}, std::vector<int>{5}}) {
    CAPTURE(hidden.size());
    FeedForwardModel m(4, 3, hidden, 0.0, 0.02);
    const Vec x = randomVec(m.dim(), 0.4, 21), t1 = randomVec(m.dim(), 0.4, 22), t2 = randomVec(m.dim(), 0.4, 23);
    const std::vector<const Vec*> teachers{&t1, &t2};
    Vec g, scratch;
    distill(m, x, d, rows, teachers, 1.5, g);
    Vec fd(x.size()), xp = x;
    const double h = gossip::precision::tol(1e-6, 1e-3);
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      xp[i] = x[i] + h;
      const double fp = distill(m, xp, d, rows, teachers, 1.5, scratch);
      xp[i] = x[i] - h;
      const double fm = distill(m, xp, d, rows, teachers, 1.5, scratch);
      xp[i] = x[i];
      fd[i] = (fp - fm) / (2 * h);
    }
    CHECK((g - fd).norm() <= gossip::precision::tol(1e-6, 5e-3) * fd.norm());
  }
}

TEST_CASE("distillation toward itself adds nothing to the gradient - and no teachers is lossAndGrad bit for bit") {
  const Dataset d = randomDataset(40, 4, 3, 7);
  const std::vector<std::uint32_t> rows{1, 5, 9, 13, 30};
  FeedForwardModel m(4, 3, {6}, 0.0, 0.0);
  const Vec x = randomVec(m.dim(), 0.4, 3);
  Vec plain, g;
  const double loss = m.lossAndGrad(x, d, rows, plain);
  CHECK(distill(m, x, d, rows, {}, 2.0, g) == loss);
  CHECK(g == plain);
  // KL(p || p) = 0 and its gradient vanishes: the teacher equal to the student changes nothing.
  const std::vector<const Vec*> self{&x};
  CHECK(distill(m, x, d, rows, self, 2.0, g) == doctest::Approx(loss).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  CHECK((g - plain).norm() <= gossip::precision::tol(1e-12, 1e-5) * plain.norm());
}

TEST_CASE("a model without a softmax output refuses a distillation term with a ConfigError") {
  Dataset d = randomDataset(10, 3, 2, 1);
  LogisticModel m(3, true, 0.0, 0.0);
  const Vec x = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
  const std::vector<const Vec*> teachers{&x};
  const std::vector<std::uint32_t> rows{0, 1};
  Vec g;
  CHECK_THROWS_AS(distill(m, x, d, rows, teachers, 1.0, g), ConfigError);
  CHECK_NOTHROW(distill(m, x, d, rows, teachers, 0.0, g));  // weight 0: the plain loss
}

// ---------------------------------------------------------------- the reference variant

TEST_CASE("reference term: predictProbs is the softmax per row - and the term is weight * mean KL(q || p) per the formula") {
  const int classes = 4;
  const Dataset ref = randomDataset(7, 3, classes, 15);
  FeedForwardModel m(3, classes, {}, 0.0, 0.01);
  const Vec x = randomVec(m.dim(), 0.5, 4);
  std::vector<double> probs;
  m.predictProbs(x, ref, probs);
  REQUIRE(probs.size() == 7u * classes);
  for (std::uint32_t r = 0; r < 7; ++r) {
    const Vec p = softmaxProbs(x, ref, r, classes);
    for (int c = 0; c < classes; ++c) CHECK(probs[r * classes + c] == doctest::Approx(p[c]).epsilon(gossip::precision::tol(1e-13, 1e-6)));
  }
  // Targets: another model's predictions.
  std::vector<double> q;
  m.predictProbs(randomVec(m.dim(), 0.5, 5), ref, q);
  const double weight = 0.6;
  Vec g = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
  const double got = m.addReferenceTerm(x, ref, q, weight, g);
  double want = 0.0;
  Vec wantGrad = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
  const auto f = static_cast<Eigen::Index>(ref.features());
  for (std::uint32_t r = 0; r < 7; ++r) {
    const Vec p = softmaxProbs(x, ref, r, classes);
    for (int c = 0; c < classes; ++c) {
      const double qc = q[r * classes + c];
      want += qc * std::log(qc / p[c]);
      const double dz = weight / 7.0 * (p[c] - qc);  // d/dz_c of weight/R KL
      for (Eigen::Index k = 0; k < f; ++k) wantGrad[c * f + k] += dz * static_cast<double>(ref.X(r, k));
      wantGrad[f * classes + c] += dz;
    }
  }
  want *= weight / 7.0;
  CHECK(got == doctest::Approx(want).epsilon(gossip::precision::tol(1e-12, 1e-5)));
  CHECK((g - wantGrad).norm() <= gossip::precision::tol(1e-12, 1e-5) * wantGrad.norm());
  // Added, not overwritten: a second call doubles the gradient.
  m.addReferenceTerm(x, ref, q, weight, g);
  CHECK((g - 2 * wantGrad).norm() <= gossip::precision::tol(1e-12, 1e-5) * wantGrad.norm());
}

TEST_CASE("reference term: gradient matches central finite differences (softmax and mlp - across a chunk boundary)") {
  const Dataset ref = randomDataset(300, 4, 3, 12);  // two chunks of the model's 256 rows
  for (const auto& hidden : {std::vector<int>{}, std::vector<int>{5}}) {
    CAPTURE(hidden.size());
    FeedForwardModel m(4, 3, hidden, 0.0, 0.0);
    const Vec x = randomVec(m.dim(), 0.4, 31);
    std::vector<double> q;
    m.predictProbs(randomVec(m.dim(), 0.4, 32), ref, q);
    const auto term = [&](const Vec& at, Vec& g) {
      g = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
      return m.addReferenceTerm(at, ref, q, 1.5, g);
    };
    Vec g, scratch;
    term(x, g);
    Vec fd(x.size()), xp = x;
    const double h = gossip::precision::tol(1e-6, 1e-3);
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      xp[i] = x[i] + h;
      const double fp = term(xp, scratch);
      xp[i] = x[i] - h;
      const double fm = term(xp, scratch);
      xp[i] = x[i];
      fd[i] = (fp - fm) / (2 * h);
    }
    CHECK((g - fd).norm() <= gossip::precision::tol(1e-6, 5e-3) * fd.norm());
    // Its own predictions as the target: KL = 0 and no gradient.
    std::vector<double> own;
    m.predictProbs(x, ref, own);
    Vec zero = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
    CHECK(std::abs(m.addReferenceTerm(x, ref, own, 1.5, zero)) < gossip::precision::tol(1e-12, 1e-6));
    CHECK(zero.norm() < gossip::precision::tol(1e-12, 1e-6));
  }
}

TEST_CASE("a model without a softmax output refuses the reference term with a ConfigError") {
  Dataset d = randomDataset(10, 3, 2, 1);
  LogisticModel m(3, true, 0.0, 0.0);
  const Vec x = Vec::Zero(static_cast<Eigen::Index>(m.dim()));
  std::vector<double> probs(20, 0.5);
  Vec g = x;
  CHECK_THROWS_AS(m.predictProbs(x, d, probs), ConfigError);
  CHECK_THROWS_AS(m.addReferenceTerm(x, d, probs, 1.0, g), ConfigError);
}
