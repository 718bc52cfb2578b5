#pragma once
// Pure gossip for the algorithm tests: every node's gradient is zero, so rounds only mix, from starting
// points that differ a lot between nodes (node i's entries are N(0, (1 + i)^2)).
#include <memory>
#include <span>
#include <utility>

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

// g = x - target_i, loss 0.5 ||g||^2: every node pulls towards its own target, so training keeps the nodes
// apart (and nodes report different losses).
class PullTo final : public training::GradientEstimator {
 public:
  explicit PullTo(Vec target) : target_(std::move(target)) {}
  double estimate(const Vec& x, Vec& g) override {
    g = x - target_;
    return 0.5 * g.squaredNorm();
  }

 private:
  Vec target_;
};

// C(x) as a receiver decodes it, for codecs that draw no randomness (fp32, fp16, bf16, top-k).
inline Vec sentValue(const compress::Compressor& c, const Vec& x) {
  compress::Encoded e;
  Rng unused(0);
  c.encode(std::span<const Real>(x.data(), static_cast<std::size_t>(x.size())), unused, e);
  Vec out = Vec::Zero(x.size());
  c.decodeAdd(e.view(), std::span<Real>(out.data(), static_cast<std::size_t>(out.size())), 1.0);
  return out;
}

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
