#include "training/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace gossip::training {

namespace {
void shuffle(std::vector<std::uint32_t>& v, Rng& rng) {
  // Fisher-Yates with Rng::below: reproducible across standard libraries, unlike std::shuffle.
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// n contiguous chunks of `order`, sizes differing by at most one, each sorted.
Partition chunk(const std::vector<std::uint32_t>& order, int nodes) {
  Partition p(static_cast<std::size_t>(nodes));
  const std::size_t n = static_cast<std::size_t>(nodes), m = order.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t b = k * m / n, e = (k + 1) * m / n;
    p[k].assign(order.begin() + static_cast<std::ptrdiff_t>(b), order.begin() + static_cast<std::ptrdiff_t>(e));
    std::sort(p[k].begin(), p[k].end());
  }
  return p;
}

void checkNodes(std::size_t samples, int nodes) {
  if (nodes < 1) throw ConfigError("nodes: must be >= 1, got " + std::to_string(nodes));
  if (samples < static_cast<std::size_t>(nodes))
    throw ConfigError("data.partition: " + std::to_string(samples) + " samples cannot give each of " +
                      std::to_string(nodes) + " nodes one sample");
}

// log of a Gamma(a, 1) variate. Marsaglia-Tsang for a >= 1; for a < 1 the boost
// Gamma(a) = Gamma(a + 1) * U^(1/a), kept in logs because U^(1/a) underflows for small a.
double logGamma(double a, Rng& rng) {
  if (a < 1.0) {
    double u = rng.uniform();
    while (u <= 0.0) u = rng.uniform();
    return logGamma(a + 1.0, rng) + std::log(u) / a;
  }
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = rng.normal();
    const double t = 1.0 + c * x;
    if (t <= 0) continue;
    const double v = t * t * t;
    const double u = rng.uniform();
    if (u > 0 && std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return std::log(d * v);
  }
}
}  // namespace

std::vector<double> sampleDirichlet(double alpha, int k, Rng& rng) {
  std::vector<double> p(static_cast<std::size_t>(k));
  for (auto& v : p) v = logGamma(alpha, rng);
  const double mx = *std::max_element(p.begin(), p.end());
  double s = 0;
  for (auto& v : p) s += (v = std::exp(v - mx));
  for (auto& v : p) v /= s;
  return p;
}

Partition partitionIid(std::size_t samples, int nodes, std::uint64_t seed) {
  checkNodes(samples, nodes);
  std::vector<std::uint32_t> order(samples);
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(deriveSeed({seed, 0x11D}));
  shuffle(order, rng);
  return chunk(order, nodes);
}

Partition partitionLabelSorted(const std::vector<std::int32_t>& labels, int nodes) {
  checkNodes(labels.size(), nodes);
  std::vector<std::uint32_t> order(labels.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return labels[a] < labels[b]; });
  return chunk(order, nodes);
}

Partition partitionDirichlet(const std::vector<std::int32_t>& labels, int classes, int nodes, double alpha,
                             std::uint64_t seed) {
  checkNodes(labels.size(), nodes);
  if (!(alpha > 0) || !std::isfinite(alpha))
    throw ConfigError("data.dirichlet_alpha: must be > 0, got " + std::to_string(alpha));
  std::vector<std::vector<std::uint32_t>> by_class(static_cast<std::size_t>(std::max(classes, 1)));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    GOSSIP_CHECK(labels[i] >= 0 && labels[i] < classes, "label ", labels[i], " outside 0..", classes - 1);
    by_class[static_cast<std::size_t>(labels[i])].push_back(static_cast<std::uint32_t>(i));
  }
  Rng rng(deriveSeed({seed, 0xD1A}));
  Partition p(static_cast<std::size_t>(nodes));
  for (auto& rows : by_class) {
    // Draw the proportions even for empty classes so the stream does not depend on which classes occur.
    const std::vector<double> prop = sampleDirichlet(alpha, nodes, rng);
    shuffle(rows, rng);
    double cum = 0;
    std::size_t begin = 0;
    for (std::size_t k = 0; k < p.size(); ++k) {
      cum += prop[k];
      const std::size_t end = k + 1 == p.size() ? rows.size()
                                                : std::min(rows.size(), static_cast<std::size_t>(std::llround(cum * static_cast<double>(rows.size()))));
      for (std::size_t j = begin; j < std::max(begin, end); ++j) p[k].push_back(rows[j]);
      begin = std::max(begin, end);
    }
  }
  // Every node needs data to compute a gradient: an empty node takes one row from the largest node
  // (lowest index on ties). Possible because samples >= nodes, and it never empties the donor.
  for (auto& node : p) {
    if (!node.empty()) continue;
    auto donor = std::max_element(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    node.push_back(donor->back());
    donor->pop_back();
  }
  for (auto& node : p) std::sort(node.begin(), node.end());
  return p;
}

Partition repeatShards(Partition p, std::size_t nodes) {
  const std::size_t k = p.size();
  GOSSIP_CHECK(k > 0 && k <= nodes, "repeatShards: ", k, " cells for ", nodes, " nodes");
  p.resize(nodes);
  for (std::size_t i = k; i < nodes; ++i) p[i] = p[i % k];
  return p;
}

Partition partitionRows(const Dataset& data, int nodes, const PartitionSpec& spec) {
  if (spec.kind == "iid") return partitionIid(data.samples(), nodes, spec.seed);
  if (spec.kind != "label_sorted" && spec.kind != "dirichlet")
    throw ConfigError("data.partition: unknown '" + spec.kind + "' (iid, label_sorted, dirichlet)");
  if (data.y.size() != data.samples() || data.classes < 1)
    throw ConfigError("data.partition: " + spec.kind + " needs class labels; use iid for regression data");
  if (spec.kind == "label_sorted") return partitionLabelSorted(data.y, nodes);
  return partitionDirichlet(data.y, data.classes, nodes, spec.dirichlet_alpha, spec.seed);
}

}  // namespace gossip::training
