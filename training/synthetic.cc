#include "training/synthetic.h"

#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace gossip::training {

namespace {
enum class Task { Logistic, LeastSquares };

Vec64 gaussian(std::size_t dim, double sd, Rng& rng) {
  Vec64 v(static_cast<Eigen::Index>(dim));
  for (Eigen::Index j = 0; j < v.size(); ++j) v[j] = sd * rng.normal();
  return v;
}

std::vector<Dataset> generate(Task task, int n_nodes, std::size_t m, std::size_t dim, double h,
                              std::uint64_t seed, double noise) {
  if (n_nodes < 1) throw ConfigError("nodes: must be >= 1");
  if (m == 0 || dim == 0) throw ConfigError("synthetic: samples_per_node and dim must be > 0");
  if (!(h >= 0)) throw ConfigError("synthetic: heterogeneity must be >= 0");
  // Scale weights so margins <a, w> are O(2): informative labels without separable data.
  const double wsd = 2.0 / std::sqrt(static_cast<double>(dim));
  Rng global(deriveSeed({seed, 0x5E7}));
  const Vec64 w = gaussian(dim, wsd, global);
  std::vector<Dataset> out(static_cast<std::size_t>(n_nodes));
  for (int i = 0; i < n_nodes; ++i) {
    Rng rng(deriveSeed({seed, static_cast<std::uint64_t>(i)}));
    const Vec64 wi = w + h * gaussian(dim, wsd, rng);
    const Vec64 mu = gaussian(dim, h, rng);
    Dataset& d = out[static_cast<std::size_t>(i)];
    d.X.resize(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(dim));
    for (Eigen::Index r = 0; r < d.X.rows(); ++r) {
      const Vec64 a = mu + gaussian(dim, 1.0, rng);
      d.X.row(r) = a.transpose().cast<float>();
      // The label uses the float-rounded features the models will see.
      const double z = d.X.row(r).cast<double>().dot(wi.transpose());
      if (task == Task::Logistic)
        d.y.push_back(rng.uniform() < 1.0 / (1.0 + std::exp(-z)) ? 1 : 0);
      else
        d.targets.push_back(z + noise * rng.normal());
    }
    d.classes = task == Task::Logistic ? 2 : 0;
  }
  return out;
}
}  // namespace

std::vector<Dataset> makeSyntheticLogistic(int n_nodes, std::size_t samples_per_node, std::size_t dim,
                                           double heterogeneity, std::uint64_t seed) {
  return generate(Task::Logistic, n_nodes, samples_per_node, dim, heterogeneity, seed, 0.0);
}

std::vector<Dataset> makeSyntheticLeastSquares(int n_nodes, std::size_t samples_per_node, std::size_t dim,
                                               double heterogeneity, std::uint64_t seed, double noise) {
  return generate(Task::LeastSquares, n_nodes, samples_per_node, dim, heterogeneity, seed, noise);
}

std::vector<std::uint32_t> allRows(const Dataset& d) {
  std::vector<std::uint32_t> r(d.samples());
  std::iota(r.begin(), r.end(), 0u);
  return r;
}

std::pair<Dataset, Partition> concatNodes(const std::vector<Dataset>& parts) {
  Dataset all;
  Partition p;
  if (parts.empty()) return {all, p};
  Eigen::Index rows = 0;
  for (const auto& d : parts) {
    if (d.features() != parts[0].features())
      throw DataError("concatNodes: node data sets have " + std::to_string(d.features()) + " and " +
                      std::to_string(parts[0].features()) + " features");
    rows += d.X.rows();
  }
  all.X.resize(rows, static_cast<Eigen::Index>(parts[0].features()));
  Eigen::Index at = 0;
  for (const auto& d : parts) {
    all.X.middleRows(at, d.X.rows()) = d.X;
    std::vector<std::uint32_t> mine(d.samples());
    std::iota(mine.begin(), mine.end(), static_cast<std::uint32_t>(at));
    p.push_back(std::move(mine));
    all.y.insert(all.y.end(), d.y.begin(), d.y.end());
    all.targets.insert(all.targets.end(), d.targets.begin(), d.targets.end());
    all.classes = std::max(all.classes, d.classes);
    at += d.X.rows();
  }
  return {all, p};
}

}  // namespace gossip::training
