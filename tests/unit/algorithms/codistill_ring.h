#pragma once
// Codistillation on real models, for test_codistill and test_codistill_reference: 6 MLP nodes on a ring,
// each trained on 40 samples of its own from three overlapping Gaussian classes, so that nodes trained
// alone disagree. Reports how far the nodes' predictions are apart and the worst node's accuracy.
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "harness.h"
#include "training/estimators.h"
#include "training/feedforward.h"

namespace gossip::testing {

// Three Gaussian classes in 4 dimensions (class c shifts coordinate c by 2).
inline training::Dataset mixture(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  training::Dataset d;
  d.classes = 3;
  d.X.resize(static_cast<Eigen::Index>(n), 4);
  for (std::size_t i = 0; i < n; ++i) {
    const auto y = static_cast<std::int32_t>(rng.below(3));
    d.y.push_back(y);
    for (Eigen::Index k = 0; k < 4; ++k)
      d.X(static_cast<Eigen::Index>(i), k) = static_cast<float>((k == y ? 2.0 : 0.0) + rng.normal());
  }
  return d;
}

struct RingOutcome {
  double spread;  // mean over 300 test points of the largest total-variation distance to the nodes' mean prediction
  double worst;   // the worst node's accuracy on 2,000 test points
};

// Trains the ring for 1,500 rounds with lr 0.1 and minibatches of 8; `reference` (may be null) is given to
// every node's estimator (codistill's reference rows).
inline RingOutcome trainCodistillRing(const algo::AlgorithmParams& p, const training::Dataset* reference = nullptr) {
  const training::FeedForwardModel model(4, 3, {8}, 0.0, 1e-3);
  std::vector<training::Dataset> data;
  for (std::uint64_t i = 0; i < 6; ++i) data.push_back(mixture(40, 100 + i));
  const training::Dataset test = mixture(2000, 7);
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(6, [&](PeerId id) {
    Vec x0;
    Rng rng(500 + id);
    model.init(x0, rng);
    std::vector<std::uint32_t> rows(40);
    for (std::uint32_t k = 0; k < 40; ++k) rows[k] = k;
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.1; };
    return std::make_unique<algo::Node>(
        id, algo::makeAlgorithm(p, *c, id, x0),
        training::makeEstimator({.kind = "sgd", .batch = 8, .reference = reference}, model, data[id], rows, id),
        std::move(sched));
  });
  for (Round t = 0; t < 1500; ++t) net.round(t);
  const training::Dataset probe = training::headOf(test, 300);
  std::vector<std::vector<double>> probs;
  RingOutcome out{0.0, 1.0};
  for (auto& [id, n] : net.nodes()) {
    out.worst = std::min(out.worst, model.accuracy(n->algorithm().x(), test));
    probs.emplace_back();
    model.predictProbs(n->algorithm().x(), probe, probs.back());
  }
  for (std::size_t r = 0; r < 300; ++r) {
    double far = 0.0;
    for (const auto& node : probs) {
      double tv = 0.0;
      for (std::size_t k = 0; k < 3; ++k) {
        double mean = 0.0;
        for (const auto& other : probs) mean += other[r * 3 + k] / static_cast<double>(probs.size());
        tv += 0.5 * std::abs(node[r * 3 + k] - mean);
      }
      far = std::max(far, tv);
    }
    out.spread += far / 300.0;
  }
  return out;
}

}  // namespace gossip::testing
