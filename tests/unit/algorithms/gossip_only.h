#pragma once
// Pure gossip for the algorithm tests: every node's gradient is zero, so rounds only mix, from starting
// points that differ a lot between nodes (node i's entries are N(0, (1 + i)^2)).
#include <memory>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "harness.h"

namespace gossip::testing {

class ZeroGradient final : public training::GradientEstimator {
 public:
  double estimate(const Vec& x, Vec& g) override {
    g = Vec::Zero(x.size());
    return 0.0;
  }
};

inline Vec gossipStart(PeerId id, Eigen::Index d) {
  Rng r(100 + id);
  Vec x(d);
  for (auto& v : x) v = r.normal() * (1.0 + id);
  return x;
}

// Nodes of a MiniNet that only mix: params and c must outlive the net.
inline MiniNet::Factory gossipOnly(const algo::AlgorithmParams& params, const compress::Compressor& c, Eigen::Index d) {
  return [&params, &c, d](PeerId id) {
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(params, c, id, gossipStart(id, d)),
                                        std::make_unique<ZeroGradient>(), algo::NodeSchedule{});
  };
}

}  // namespace gossip::testing
