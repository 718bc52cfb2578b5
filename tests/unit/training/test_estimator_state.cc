// Estimator checkpoint state: for every kind, save -> load into an estimator built with another seed
// continues bit-identically; truncated, wrong-kind or mismatched state throws DecodeError and leaves the
// estimator exactly as it was (it keeps producing what an untouched twin produces).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>

#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/estimators.h"
#include "training/model_factory.h"

using namespace gossip;
using namespace gossip::training;
using testing::randomDataset;
using testing::randomVec;

namespace {

struct Problem {
  Dataset data = randomDataset(60, 4, 2, 101);
  std::unique_ptr<Model> model = makeModel({"logistic", {}, 0.0, 0.1, true}, 4, 2);
  std::vector<std::uint32_t> rows = every(3);  // 20 samples on this node

  std::vector<std::uint32_t> every(std::uint32_t step) const {
    std::vector<std::uint32_t> r;
    for (std::uint32_t i = 0; i < data.samples(); i += step) r.push_back(i);
    return r;
  }
  std::unique_ptr<GradientEstimator> make(const EstimatorSpec& spec, std::uint64_t seed) const {
    return makeEstimator(spec, *model, data, rows, seed);
  }
};

// lsvrg_p well above batch/m so reference refreshes happen within a few steps.
const EstimatorSpec kSpecs[] = {{"sgd", 3, 0},        {"full", 3, 0},       {"lsvrg", 3, 0.3},
                                {"saga", 3, 0},       {"saga_table", 3, 0}, {"saga_scalar", 3, 0},
                                {"sgd", 1, 0},        {"saga_table", 20, 0}};

Bytes save(const GradientEstimator& e) {
  Bytes b;
  ByteWriter w(b);
  e.saveState(w);
  return b;
}

void load(GradientEstimator& e, std::span<const std::byte> b) {
  ByteReader r(b, "estimator state");
  e.loadState(r);
  r.expectEnd();
}

// Runs `steps` estimates at points drawn from `seed`, requiring a and b to agree bit for bit.
void requireIdentical(GradientEstimator& a, GradientEstimator& b, int steps, std::uint64_t seed) {
  Vec ga, gb;
  for (int s = 0; s < steps; ++s) {
    const Vec x = randomVec(5, 1.0, seed + static_cast<std::uint64_t>(s));
    const double la = a.estimate(x, ga);
    const double lb = b.estimate(x, gb);
    REQUIRE(std::memcmp(&la, &lb, sizeof la) == 0);
    REQUIRE(ga.size() == gb.size());
    REQUIRE(std::memcmp(ga.data(), gb.data(), sizeof(Real) * static_cast<std::size_t>(ga.size())) == 0);
  }
  CHECK(a.sampleGradients() == b.sampleGradients());
}

void warm(GradientEstimator& e, int steps, std::uint64_t seed) {
  Vec g;
  for (int s = 0; s < steps; ++s) e.estimate(randomVec(5, 1.0, seed + static_cast<std::uint64_t>(s)), g);
}

}  // namespace

TEST_CASE("estimator state restores into a differently seeded estimator bit-identically") {
  Problem p;
  for (const EstimatorSpec& spec : kSpecs)
    for (int k : {0, 1, 9}) {
      CAPTURE(spec.kind);
      CAPTURE(spec.batch);
      CAPTURE(k);
      auto a = p.make(spec, 1);
      warm(*a, k, 500);
      const Bytes state = save(*a);
      auto b = p.make(spec, 2);
      load(*b, state);
      CHECK(save(*b) == state);
      requireIdentical(*a, *b, 40, 700);
      CHECK(save(*a) == save(*b));
    }
}

TEST_CASE("table SAGA state round trips on a non-linear model") {
  const Dataset d = randomDataset(30, 3, 3, 5);
  auto m = makeModel({"mlp", {4}, 0, 0.01, true}, 3, 3);
  std::vector<std::uint32_t> rows(12);
  std::iota(rows.begin(), rows.end(), 0u);
  auto a = makeEstimator({"saga", 2, 0}, *m, d, rows, 1);
  Vec x(static_cast<Eigen::Index>(m->dim())), g;
  for (int s = 0; s < 5; ++s) {
    x = randomVec(m->dim(), 0.5, static_cast<std::uint64_t>(s));
    a->estimate(x, g);
  }
  auto b = makeEstimator({"saga", 2, 0}, *m, d, rows, 9);
  load(*b, save(*a));
  Vec ga, gb;
  for (int s = 0; s < 20; ++s) {
    x = randomVec(m->dim(), 0.5, 100 + static_cast<std::uint64_t>(s));
    REQUIRE(a->estimate(x, ga) == b->estimate(x, gb));
    REQUIRE(ga == gb);
  }
}

TEST_CASE("truncated or wrong-kind estimator state is rejected and changes nothing") {
  Problem p;
  for (const EstimatorSpec& spec : kSpecs) {
    CAPTURE(spec.kind);
    CAPTURE(spec.batch);
    auto target = p.make(spec, 3);
    auto twin = p.make(spec, 3);
    warm(*target, 4, 900);
    warm(*twin, 4, 900);
    const Bytes before = save(*target);

    auto source = p.make(spec, 4);
    warm(*source, 6, 1000);
    const Bytes good = save(*source);
    for (std::size_t n = 0; n < good.size(); ++n) {
      CAPTURE(n);
      REQUIRE_THROWS_AS(load(*target, std::span<const std::byte>(good).first(n)), DecodeError);
    }
    // Another kind's state (saga on this linear model is saga_scalar: same kind, skipped).
    for (const EstimatorSpec& other : kSpecs) {
      auto o = p.make(other, 5);
      warm(*o, 2, 1100);
      const Bytes theirs = save(*o);
      if (std::memcmp(theirs.data(), good.data(), 4) == 0) continue;
      CAPTURE(other.kind);
      CHECK_THROWS_WITH_AS(load(*target, theirs), doctest::Contains("state does not hold"), DecodeError);
    }
    CHECK(save(*target) == before);
    requireIdentical(*target, *twin, 20, 1200);
  }
}

TEST_CASE("estimator state must match this node's rows - batch and dimension") {
  Problem p;
  for (const char* kind : {"sgd", "lsvrg", "saga_table", "saga_scalar"}) {
    CAPTURE(kind);
    auto a = p.make({kind, 3, 0.5}, 1);
    warm(*a, 3, 10);
    const Bytes state = save(*a);

    // Fewer rows on the loading node: the permutation (and SAGA memory) no longer fit.
    auto fewer = makeEstimator({kind, 3, 0.5}, *p.model, p.data, p.every(4), 2);
    CHECK_THROWS_AS(load(*fewer, state), DecodeError);
    // Another batch size would continue a different random stream.
    auto batch = p.make({kind, 2, 0.5}, 2);
    CHECK_THROWS_WITH_AS(load(*batch, state), doctest::Contains("batch"), DecodeError);
    // Another model dimension (5 features instead of 4).
    const Dataset wide = randomDataset(60, 5, 2, 7);
    auto wideModel = makeModel({"logistic", {}, 0.0, 0.1, true}, 5, 2);
    auto dim = makeEstimator({kind, 3, 0.5}, *wideModel, wide, p.rows, 2);
    if (std::string(kind) != "sgd") CHECK_THROWS_AS(load(*dim, state), DecodeError);
  }
}

TEST_CASE("a corrupted sampling permutation is rejected") {
  Problem p;
  auto a = p.make({"sgd", 3, 0}, 1);
  warm(*a, 3, 10);
  Bytes state = save(*a);
  // tag(4) batch(8) rng(32) count(8), then 20 u32 positions: make the second equal to the first.
  const std::size_t at = 4 + 8 + 32 + 8;
  std::memcpy(state.data() + at + 4, state.data() + at, 4);
  auto b = p.make({"sgd", 3, 0}, 2);
  CHECK_THROWS_WITH_AS(load(*b, state), doctest::Contains("permutation"), DecodeError);
  // An out-of-range position.
  state = save(*a);
  const std::uint32_t big = 20;
  std::memcpy(state.data() + at, &big, 4);
  CHECK_THROWS_WITH_AS(load(*b, state), doctest::Contains("permutation"), DecodeError);
}
