// Partitions (coverage, balance, skew), the Dirichlet sampler against its known moments, and the
// synthetic heterogeneous problems.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/partition.h"
#include "training/synthetic.h"

using namespace gossip;
using namespace gossip::training;

namespace {

void checkCoversOnce(const Partition& p, std::size_t samples, int nodes) {
  REQUIRE(p.size() == static_cast<std::size_t>(nodes));
  std::vector<int> seen(samples, 0);
  for (const auto& node : p) {
    CHECK_FALSE(node.empty());
    CHECK(std::is_sorted(node.begin(), node.end()));
    const bool in_range = std::all_of(node.begin(), node.end(), [&](std::uint32_t r) { return r < samples; });
    REQUIRE(in_range);
    for (auto r : node) ++seen[r];
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

std::vector<std::int32_t> cyclicLabels(std::size_t n, int classes) {
  std::vector<std::int32_t> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<std::int32_t>((i * 7) % static_cast<std::size_t>(classes));
  return y;
}

// Mean over nodes of the share of the node's most frequent class.
double meanDominantShare(const Partition& p, const std::vector<std::int32_t>& y, int classes) {
  double s = 0;
  for (const auto& node : p) {
    std::vector<int> c(static_cast<std::size_t>(classes), 0);
    for (auto r : node) ++c[static_cast<std::size_t>(y[r])];
    s += *std::max_element(c.begin(), c.end()) / static_cast<double>(node.size());
  }
  return s / static_cast<double>(p.size());
}

}  // namespace

TEST_CASE("iid partition: every row once - balanced - deterministic per seed") {
  for (int n : {1, 2, 3, 7, 16}) {
    CAPTURE(n);
    const Partition p = partitionIid(103, n, 5);
    checkCoversOnce(p, 103, n);
    std::size_t lo = 103, hi = 0;
    for (const auto& node : p) {
      lo = std::min(lo, node.size());
      hi = std::max(hi, node.size());
    }
    CHECK(hi - lo <= 1);
    CHECK(partitionIid(103, n, 5) == p);
    if (n > 1) CHECK(partitionIid(103, n, 6) != p);
  }
}

TEST_CASE("label-sorted partition gives contiguous label ranges") {
  const auto y = cyclicLabels(100, 5);
  const Partition p = partitionLabelSorted(y, 10);
  checkCoversOnce(p, 100, 10);
  for (std::size_t k = 0; k + 1 < p.size(); ++k) {
    std::int32_t mx = -1, mn = 100;
    for (auto r : p[k]) mx = std::max(mx, y[r]);
    for (auto r : p[k + 1]) mn = std::min(mn, y[r]);
    CHECK(mx <= mn);
  }
  // 20 rows per class, 10 per node: every node holds a single class.
  CHECK(meanDominantShare(p, y, 5) == 1.0);
}

TEST_CASE("Dirichlet partition: covers every row - no empty node - skew follows alpha") {
  const int classes = 10;
  const auto y = cyclicLabels(20000, classes);
  const Partition skewed = partitionDirichlet(y, classes, 20, 0.01, 3);
  checkCoversOnce(skewed, 20000, 20);
  CHECK(meanDominantShare(skewed, y, classes) > 0.9);
  const Partition flat = partitionDirichlet(y, classes, 20, 1000.0, 3);
  checkCoversOnce(flat, 20000, 20);
  CHECK(meanDominantShare(flat, y, classes) < 0.15);  // 0.1 is perfectly uniform
  // Node sizes near-equal for large alpha too.
  for (const auto& node : flat) CHECK(std::abs(static_cast<double>(node.size()) - 1000.0) < 150.0);
  CHECK(partitionDirichlet(y, classes, 20, 0.5, 9) == partitionDirichlet(y, classes, 20, 0.5, 9));

  // Many nodes, few samples, tiny alpha: most nodes would be empty without the repair step.
  const auto small = cyclicLabels(60, 3);
  checkCoversOnce(partitionDirichlet(small, 3, 50, 0.01, 1), 60, 50);
  checkCoversOnce(partitionDirichlet(small, 3, 60, 0.01, 2), 60, 60);
}

TEST_CASE("Dirichlet sampler matches the known mean and variance") {
  for (double alpha : {0.3, 2.5}) {
    CAPTURE(alpha);
    const int k = 4, draws = 40000;
    Rng rng(17);
    double mean = 0, sq = 0, worst_sum = 0;
    for (int i = 0; i < draws; ++i) {
      const auto p = sampleDirichlet(alpha, k, rng);
      worst_sum = std::max(worst_sum, std::abs(std::accumulate(p.begin(), p.end(), 0.0) - 1.0));
      mean += p[0];
      sq += p[0] * p[0];
    }
    CHECK(worst_sum < 1e-12);
    mean /= draws;
    const double var = sq / draws - mean * mean;
    const double a0 = alpha * k;
    CHECK(mean == doctest::Approx(0.25).epsilon(0.02));
    CHECK(var == doctest::Approx(0.25 * 0.75 / (a0 + 1)).epsilon(0.04));
  }
  Rng rng(1);
  const auto tiny = sampleDirichlet(1e-3, 5, rng);  // log-space: no 0/0 even when every U^(1/a) underflows
  CHECK(std::accumulate(tiny.begin(), tiny.end(), 0.0) == doctest::Approx(1.0));
}

TEST_CASE("partitionRows validates its configuration") {
  const Dataset d = testing::randomDataset(10, 2, 3, 1);
  CHECK(partitionRows(d, 3, {"label_sorted", 0.5, 0}).size() == 3);
  CHECK_THROWS_WITH_AS(partitionRows(d, 3, {"random", 0.5, 0}), doctest::Contains("data.partition"), ConfigError);
  CHECK_THROWS_WITH_AS(partitionRows(d, 11, {"iid", 0.5, 0}), doctest::Contains("10 samples"), ConfigError);
  CHECK_THROWS_AS(partitionRows(d, 0, {"iid", 0.5, 0}), ConfigError);
  CHECK_THROWS_WITH_AS(partitionRows(d, 3, {"dirichlet", 0.0, 0}), doctest::Contains("data.dirichlet_alpha"),
                       ConfigError);
  const Dataset r = testing::randomDataset(10, 2, 0, 1);
  CHECK_THROWS_AS(partitionRows(r, 3, {"dirichlet", 1.0, 0}), ConfigError);
  CHECK(partitionRows(r, 3, {"iid", 1.0, 0}).size() == 3);
}

TEST_CASE("synthetic problems: shapes - determinism - heterogeneity - noise level") {
  const auto a = makeSyntheticLogistic(4, 300, 6, 0.0, 7);
  REQUIRE(a.size() == 4);
  for (const auto& d : a) {
    CHECK(d.samples() == 300);
    CHECK(d.features() == 6);
    CHECK(d.classes == 2);
    const auto ones = std::count(d.y.begin(), d.y.end(), 1);
    CHECK(ones > 60);
    CHECK(ones < 240);
  }
  CHECK(makeSyntheticLogistic(4, 300, 6, 0.0, 7)[2].X == a[2].X);
  // Node i's data does not depend on the node count.
  CHECK(makeSyntheticLogistic(2, 300, 6, 0.0, 7)[1].X == a[1].X);

  auto meanGap = [](const std::vector<Dataset>& v) {
    const Eigen::VectorXd m0 = v[0].X.cast<double>().colwise().mean().transpose();
    const Eigen::VectorXd m1 = v[1].X.cast<double>().colwise().mean().transpose();
    return (m0 - m1).norm();
  };
  CHECK(meanGap(a) < 0.5);  // sampling noise only: about sqrt(2 * 6 / 300)
  CHECK(meanGap(makeSyntheticLogistic(4, 300, 6, 2.0, 7)) > 2.0);

  // Least squares: the per-node least-squares fit leaves residuals at the noise level.
  const auto ls = makeSyntheticLeastSquares(2, 400, 5, 1.0, 3, 0.1);
  for (const auto& d : ls) {
    CHECK(d.classes == 0);
    const Eigen::MatrixXd A = d.X.cast<double>();
    const Eigen::VectorXd t = Eigen::Map<const Eigen::VectorXd>(d.targets.data(), 400);
    const Eigen::VectorXd w = A.colPivHouseholderQr().solve(t);
    const double rms = std::sqrt((A * w - t).squaredNorm() / 400.0);
    CHECK(rms == doctest::Approx(0.1).epsilon(0.15));
  }

  const auto [all, parts] = concatNodes(a);
  CHECK(all.samples() == 1200);
  checkCoversOnce(parts, 1200, 4);
  CHECK(all.X.row(300) == a[1].X.row(0));
  CHECK(all.y[300] == a[1].y[0]);
}

TEST_CASE("data.shards: more nodes than shards - node i trains on shard i mod shards") {
  const Partition three = partitionIid(12, 3, 5);
  const Partition seven = repeatShards(three, 7);
  REQUIRE(seven.size() == 7);
  for (std::size_t i = 0; i < 7; ++i) CHECK(seven[i] == three[i % 3]);
  CHECK(repeatShards(three, 3) == three);  // one shard per node: unchanged
  // 100,000 nodes on 60,000 samples cannot have a shard each; 10,000 shards of 6 serve them all.
  CHECK_THROWS_WITH_AS(partitionIid(60000, 100000, 1), doctest::Contains("cannot give each of 100000 nodes"), ConfigError);
  const Partition many = repeatShards(partitionIid(60000, 10000, 1), 100000);
  CHECK(many.size() == 100000);
  CHECK(many[99999] == many[9999]);
  CHECK(many[12345].size() == 6);
}
