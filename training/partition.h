#pragma once
// Splitting one data set across n nodes, deterministically from a seed: every row goes to exactly one
// node and every node gets at least one row. Each node's row list is sorted ascending (better locality
// when a minibatch gathers its rows; the estimators sample from the list, so order carries no meaning).
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "training/dataset.h"

namespace gossip::training {

using Partition = std::vector<std::vector<std::uint32_t>>;

struct PartitionSpec {
  std::string kind = "iid";      // iid | label_sorted | dirichlet
  double dirichlet_alpha = 0.5;  // dirichlet: small = each node sees few classes, large = near iid
  std::uint64_t seed = 0;
};

// Shuffle, then n contiguous chunks whose sizes differ by at most one.
Partition partitionIid(std::size_t samples, int nodes, std::uint64_t seed);
// Stable sort by label (ties by row index, so no seed), then n contiguous chunks as in iid: the most
// heterogeneous split (the "sorted" split of the CHOCO-SGD experiments).
Partition partitionLabelSorted(const std::vector<std::int32_t>& labels, int nodes);
// Per class c: proportions p ~ Dirichlet(alpha * 1_n) over nodes, the class's shuffled rows cut at the
// rounded cumulative proportions. Nodes left empty then take one row each from the largest node.
Partition partitionDirichlet(const std::vector<std::int32_t>& labels, int classes, int nodes, double alpha,
                             std::uint64_t seed);

// Dispatch on spec.kind. ConfigError (naming data.partition / data.dirichlet_alpha / nodes) on bad
// parameters or when the data has fewer samples than nodes, or label-based kinds on regression data.
// `p` (k cells) grown to `nodes` cells, cell i a copy of cell i mod k (data.shards: nodes i and i + k train
// on the same rows); `p` itself when it has `nodes` cells already.
Partition repeatShards(Partition p, std::size_t nodes);

Partition partitionRows(const Dataset& data, int nodes, const PartitionSpec& spec);

// Dirichlet(alpha * 1_k) sample, computed in log space so that tiny alpha (0.01) does not underflow to
// all zeros. Exposed for tests.
std::vector<double> sampleDirichlet(double alpha, int k, Rng& rng);

}  // namespace gossip::training
