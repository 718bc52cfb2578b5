#pragma once
// Synthetic per-node problems for tests and experiments, with tunable heterogeneity: node i draws its
// features from N(mu_i, I) and its labels/targets from its own true weights w_i = w + h * delta_i, with
// mu_i = h * N(0, I). heterogeneity h = 0 gives i.i.d. nodes; h ~ 1 makes local optima clearly differ,
// which is what separates exact methods (ED, LEAD) from biased ones (D-PSGD with a constant step).
// Deterministic in (all arguments); node i's data does not depend on how many nodes follow it.
#include <cstdint>
#include <utility>
#include <vector>

#include "training/dataset.h"
#include "training/partition.h"

namespace gossip::training {

// Binary labels y ~ Bernoulli(sigmoid(<a, w_i>)) (noisy, so the unregularized problem stays bounded in
// practice), classes = 2.
std::vector<Dataset> makeSyntheticLogistic(int n_nodes, std::size_t samples_per_node, std::size_t dim,
                                           double heterogeneity, std::uint64_t seed);
// Regression targets t = <a, w_i> + noise * N(0, 1), classes = 0 (for LeastSquaresModel / ridge).
std::vector<Dataset> makeSyntheticLeastSquares(int n_nodes, std::size_t samples_per_node, std::size_t dim,
                                               double heterogeneity, std::uint64_t seed, double noise = 0.1);

// Rows 0..samples-1 (a node that owns its whole data set).
std::vector<std::uint32_t> allRows(const Dataset& d);
// Stacks the node data sets into one and returns the rows each node contributed.
std::pair<Dataset, Partition> concatNodes(const std::vector<Dataset>& parts);

}  // namespace gossip::training
