// Gradient estimators: exactness of the full gradient, unbiasedness of SGD / LSVRG / SAGA from arbitrary
// (warmed-up) memory states, vanishing variance of the variance-reduced ones at the optimum, agreement of
// the scalar and table SAGA forms, and factory validation.
#include <doctest/doctest.h>

#include <numeric>

#include "tests/support/precision.h"
#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/reference_solver.h"

using namespace gossip;
using namespace gossip::training;
using testing::randomDataset;
using testing::randomVec;

namespace {

std::vector<std::uint32_t> everyThird(std::size_t n) {
  std::vector<std::uint32_t> r;
  for (std::uint32_t i = 0; i < n; i += 3) r.push_back(i);
  return r;
}

struct Fixture {
  Dataset data = randomDataset(60, 4, 2, 101);
  std::unique_ptr<Model> model = makeModel({"logistic", {}, 0.0, 0.1, true}, 4, 2);
  std::vector<std::uint32_t> rows = everyThird(60);  // 20 samples on this node
};

// Mean of `k` estimates at x from one estimator whose memory is scrambled by a call at a random point
// before each of them. E[g | memory] = grad f(x) for every memory state, so the estimates at x form a
// martingale-difference sequence around the full gradient and their mean must converge to it. Returns
// ||mean - full||^2 and the mean squared deviation of single estimates.
std::pair<double, double> biasAndVariance(const Fixture& f, const EstimatorSpec& spec, const Vec& x, int k) {
  Vec full, g;
  f.model->lossAndGrad(x, f.data, f.rows, full);
  auto est = makeEstimator(spec, *f.model, f.data, f.rows, 1000);
  Rng rng(7);
  Vec other(x.size());
  Vec sum = Vec::Zero(x.size());
  double sq = 0;
  for (int s = 0; s < k; ++s) {
    for (Eigen::Index i = 0; i < other.size(); ++i) other[i] = rng.normal();
    est->estimate(other, g);
    est->estimate(x, g);
    sum += g;
    sq += (g - full).squaredNorm();
  }
  return {(sum / k - full).squaredNorm(), sq / k};
}

}  // namespace

TEST_CASE("full-gradient estimator equals the model gradient") {
  Fixture f;
  auto est = makeEstimator({"full", 32, 0}, *f.model, f.data, f.rows, 1);
  const Vec x = randomVec(5, 0.5, 2);
  Vec g, ref;
  const double loss = est->estimate(x, g);
  CHECK(loss == f.model->lossAndGrad(x, f.data, f.rows, ref));
  CHECK(g == ref);
  CHECK(est->sampleGradients() == 20u);
}

namespace {
void checkUnbiased(std::initializer_list<EstimatorSpec> specs) {
  Fixture f;
  const Vec x = randomVec(5, 0.8, 3);
  const int k = 6000;
  for (const EstimatorSpec& spec : specs) {
    CAPTURE(spec.kind);
    CAPTURE(spec.batch);
    const auto [bias2, var] = biasAndVariance(f, spec, x, k);
    CHECK(var > 1e-6);  // a real random estimate, so the bias test below has power
    // E||mean - full||^2 = var / k; allow 5x for the fixed-seed draw.
    CHECK(bias2 < 5.0 * var / k);
  }
}
}  // namespace

TEST_CASE("SGD and LSVRG estimates are unbiased") {
  checkUnbiased({{"sgd", 1, 0}, {"sgd", 4, 0}, {"lsvrg", 1, 0.3}, {"lsvrg", 3, 0}});
}

TEST_CASE("SAGA estimates (scalar and table memory) are unbiased") {
  checkUnbiased({{"saga", 1, 0}, {"saga_table", 1, 0}, {"saga_table", 4, 0}, {"saga_scalar", 3, 0}});
}

TEST_CASE("SGD mean approaches the full gradient as draws grow") {
  Fixture f;
  const Vec x = randomVec(5, 0.8, 4);
  Vec full, g;
  f.model->lossAndGrad(x, f.data, f.rows, full);
  auto est = makeEstimator({"sgd", 5, 0}, *f.model, f.data, f.rows, 9);
  Vec sum = Vec::Zero(5);
  double err100 = 0;
  for (int i = 1; i <= 20000; ++i) {
    est->estimate(x, g);
    sum += g;
    if (i == 100) err100 = (sum / i - full).norm();
  }
  const double err = (sum / 20000 - full).norm();
  CHECK(err < err100 / 4);  // ~ 1/sqrt(draws): expected factor 14
  CHECK(err < 0.01 * full.norm() + 1e-3);
  CHECK(est->sampleGradients() == 100000u);
}

TEST_CASE("variance-reduced estimators converge exactly with a constant step - SGD does not") {
  Fixture f;
  const Shard shard{&f.data, f.rows};
  const ReferenceResult ref = solveReference(*f.model, std::span<const Shard>(&shard, 1));
  REQUIRE(ref.residual < 1e-12);
  // Step 1/(3 L_max) with L_max = max_j ||a_j||^2 / 4 + l2 (per-sample smoothness of logistic loss).
  double lmax = 0;
  for (auto r : f.rows) lmax = std::max(lmax, (f.data.X.row(r).squaredNorm() + 1.0) / 4.0);
  const double eta = 1.0 / (3.0 * (lmax + 0.1));
  for (const char* kind : {"lsvrg", "saga", "saga_table", "sgd"}) {
    const std::string kind_name = kind;
    CAPTURE(kind_name);
    auto est = makeEstimator({kind, 1, 0}, *f.model, f.data, f.rows, 77);
    Vec x = Vec::Zero(5), g, full;
    for (int it = 0; it < 6000; ++it) {
      est->estimate(x, g);
      x -= eta * g;
    }
    est->estimate(x, g);
    f.model->lossAndGrad(x, f.data, f.rows, full);
    const double dist = (x - ref.x).norm();
    const double deviation = (g - full).norm();  // estimator noise at the final point
    if (std::string(kind) == "sgd") {
      CHECK(dist > 1e-4);
      CHECK(deviation > 1e-3);
    } else {
      CHECK(dist < gossip::precision::tol(1e-9, 1e-4));
      CHECK(deviation < gossip::precision::tol(1e-9, 1e-4));
    }
  }
}

TEST_CASE("scalar-memory SAGA reproduces table SAGA draw for draw") {
  Fixture f;
  auto scalar = makeEstimator({"saga_scalar", 2, 0}, *f.model, f.data, f.rows, 5);
  auto table = makeEstimator({"saga_table", 2, 0}, *f.model, f.data, f.rows, 5);
  CHECK(dynamic_cast<SagaScalarEstimator*>(makeEstimator({"saga", 2, 0}, *f.model, f.data, f.rows, 5).get()));
  Vec gs, gt;
  for (int it = 0; it < 50; ++it) {
    const Vec x = randomVec(5, 1.0, static_cast<std::uint64_t>(it));
    const double ls = scalar->estimate(x, gs);
    const double lt = table->estimate(x, gt);
    CHECK(ls == doctest::Approx(lt).epsilon(1e-12));
    CHECK((gs - gt).norm() < gossip::precision::tol(1e-12, 1e-5) * (1 + gt.norm()));
  }
  // reset() re-initializes the memory at the next point, after which both agree again.
  scalar->reset();
  table->reset();
  const Vec x = randomVec(5, 1.0, 99);
  scalar->estimate(x, gs);
  table->estimate(x, gt);
  CHECK((gs - gt).norm() < gossip::precision::tol(1e-12, 1e-5) * (1 + gt.norm()));
}

TEST_CASE("SAGA on a non-linear model uses the table form") {
  const Dataset d = randomDataset(30, 3, 3, 5);
  auto m = makeModel({"mlp", {4}, 0, 0.01, true}, 3, 3);
  std::vector<std::uint32_t> rows(30);
  std::iota(rows.begin(), rows.end(), 0u);
  auto est = makeEstimator({"saga", 1, 0}, *m, d, rows, 1);
  CHECK(dynamic_cast<SagaTableEstimator*>(est.get()) != nullptr);
  CHECK_THROWS_WITH_AS(makeEstimator({"saga_scalar", 1, 0}, *m, d, rows, 1), doctest::Contains("estimator.kind"),
                       ConfigError);
}

TEST_CASE("estimator factory validates its input") {
  Fixture f;
  CHECK_THROWS_WITH_AS(makeEstimator({"adam", 1, 0}, *f.model, f.data, f.rows, 1),
                       doctest::Contains("estimator.kind"), ConfigError);
  CHECK_THROWS_WITH_AS(makeEstimator({"sgd", 0, 0}, *f.model, f.data, f.rows, 1),
                       doctest::Contains("estimator.batch"), ConfigError);
  CHECK_THROWS_WITH_AS(makeEstimator({"lsvrg", 1, 1.5}, *f.model, f.data, f.rows, 1),
                       doctest::Contains("estimator.lsvrg_p"), ConfigError);
  CHECK_THROWS_AS(makeEstimator({"sgd", 1, 0}, *f.model, f.data, {}, 1), ConfigError);
  CHECK_THROWS_AS(makeEstimator({"sgd", 1, 0}, *f.model, f.data, {60}, 1), ConfigError);
  // A batch larger than the node's data is the full local batch.
  auto big = makeEstimator({"sgd", 1000, 0}, *f.model, f.data, f.rows, 1);
  const Vec x = randomVec(5, 1.0, 1);
  Vec g, full;
  big->estimate(x, g);
  f.model->lossAndGrad(x, f.data, f.rows, full);
  CHECK((g - full).norm() < gossip::precision::tol(1e-14, 1e-6));
}
