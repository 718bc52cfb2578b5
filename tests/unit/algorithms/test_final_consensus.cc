// The final consensus phase (NodeSchedule::consensus_from, algorithm.final_consensus_rounds): from that round
// on a node takes no gradient step and sets x_i <- sum_j w_ij fp32(x_j). Checked against that formula computed
// here from the rows and the models before the round, with a gradient that is never zero (so a gradient step
// taken by mistake would show), and over many rounds: the nodes meet at the average they started the phase at.
#include <doctest/doctest.h>

#include <map>

#include "tests/support/precision.h"
#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "gossip_only.h"
#include "harness.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

Vec fp32(const Vec& x) { return x.cast<float>().cast<Real>(); }

constexpr Eigen::Index kDim = 50;

MiniNet::Factory pulledNodes(const algo::AlgorithmParams& params, const compress::Compressor& c, Round consensusFrom,
                             std::string codec = "fp32") {
  return [&params, &c, consensusFrom, codec](PeerId id) {
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.2; };
    sched.consensus_from = consensusFrom;
    sched.consensus_codec = codec;
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(params, c, id, gossipStart(id, kDim)),
                                        std::make_unique<PullTo>(gossipStart(id + 50, kDim)), std::move(sched));
  };
}

double spread(MiniNet& net, const Vec& center) {
  double worst = 0.0;
  for (auto& [id, n] : net.nodes()) worst = std::max<double>(worst, (n->algorithm().x() - center).norm());
  return worst;
}

Vec average(MiniNet& net) {
  Vec s = Vec::Zero(kDim);
  for (auto& [id, n] : net.nodes()) s += n->algorithm().x();
  return s / static_cast<double>(net.nodes().size());
}

}  // namespace

TEST_CASE("final consensus: each round sets x_i to sum_j w_ij fp32(x_j) - with no gradient step") {
  for (const char* name : {"dpsgd", "deepsqueeze", "choco"}) {
    CAPTURE(name);
    algo::AlgorithmParams params{.name = name, .eta = 0.5, .gamma = 0.3};
    auto c = compress::makeCompressor({.name = "topk", .ratio = 0.2});
    constexpr Round from = 5;
    MiniNet net(6, pulledNodes(params, *c, from));
    for (Round t = 0; t < from; ++t) net.round(t);
    for (Round t = from; t < from + 2; ++t) {
      std::map<PeerId, Vec> y;
      for (auto& [id, n] : net.nodes()) {
        CHECK(n->consensusRound(t));
        y[id] = fp32(n->algorithm().x());
      }
      net.round(t);
      for (auto& [id, n] : net.nodes()) {
        CAPTURE(id);
        const auto& row = net.row(id);
        Vec want = row.self * y.at(id);
        for (const auto& [j, w] : row.neighbors) want += w * y.at(j);
        const Vec& got = n->algorithm().x();
        REQUIRE((want - y.at(id)).norm() > 1e-3);  // a round that changed nothing would not test the formula
        CHECK((got - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
        CHECK(n->disagreement() == doctest::Approx((y.at(id) - want).norm()).epsilon(gossip::precision::tol(1e-9, 1e-3)));
      }
    }
  }
}

TEST_CASE("final consensus: the nodes meet at the average model they had when the phase began") {
  for (const char* name : {"dpsgd", "deepsqueeze", "choco"}) {
    CAPTURE(name);
    algo::AlgorithmParams params{.name = name, .eta = 0.5, .gamma = 0.3};
    auto c = compress::makeCompressor({.name = "topk", .ratio = 0.1});
    constexpr Round from = 40;
    MiniNet net(8, pulledNodes(params, *c, from));
    for (Round t = 0; t < from; ++t) net.round(t);
    const Vec before = average(net);
    const double apart = spread(net, before);
    REQUIRE(apart > 0.1);  // training towards different targets kept the nodes apart
    for (Round t = from; t < from + 300; ++t) net.round(t);
    const Vec after = average(net);
    // Doubly-stochastic rows keep the average; fp32 rounding of each message moves it by ~1e-7 relative.
    CHECK((after - before).norm() <= 1e-5 * before.norm());
    CHECK(spread(net, after) <= 1e-6 * apart);
  }
}

TEST_CASE("final consensus: a node whose neighbour's message is missing keeps that weight on its own model") {
  algo::AlgorithmParams params{.name = "dpsgd"};
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(5, pulledNodes(params, *c, 0));
  std::map<PeerId, Vec> y;
  for (auto& [id, n] : net.nodes()) y[id] = fp32(n->algorithm().x());
  net.round(0, [](PeerId from, PeerId to, Round) { return from == 1 && to == 2; });
  const auto& row = net.row(2);
  Vec want = row.self * y.at(2);
  for (const auto& [j, w] : row.neighbors) want += w * (j == 1 ? y.at(2) : y.at(j));
  CHECK((net.nodes().at(2)->algorithm().x() - want).norm() <= 1e-12 * want.norm());
}

TEST_CASE("final consensus in fp16 or bf16: half the bytes - x_i <- sum_j w_ij C(x_j) with C the rounding - one model at the end") {
  for (const char* codec : {"fp16", "bf16"}) {
    CAPTURE(codec);
    auto cc = compress::makeCompressor({.name = codec});
    const auto round16 = [&](const Vec& x) { return sentValue(*cc, x); };  // what a node holding x sends
    algo::AlgorithmParams params{.name = "dpsgd"};
    auto c = compress::makeCompressor({.name = "topk", .ratio = 0.2});
    constexpr Round from = 5;
    MiniNet net(6, pulledNodes(params, *c, from, codec));
    for (Round t = 0; t < from; ++t) net.round(t);
    // The message of a consensus round: the codec's 8-byte header and 2 bytes per entry.
    {
      compress::Encoded out;
      auto probe = pulledNodes(params, *c, 0, codec)(0);
      probe->beginRound(0, out);
      CHECK(out.size() == 8 + 2 * kDim);
    }
    std::map<PeerId, Vec> y;
    for (auto& [id, n] : net.nodes()) y[id] = round16(n->algorithm().x());
    net.round(from);
    for (auto& [id, n] : net.nodes()) {
      CAPTURE(id);
      const auto& row = net.row(id);
      Vec want = row.self * y.at(id);
      for (const auto& [j, w] : row.neighbors) want += w * y.at(j);
      CHECK((n->algorithm().x() - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
    }
    for (Round t = from + 1; t < from + 300; ++t) net.round(t);
    const Vec after = average(net);
    CHECK(spread(net, after) <= 1e-2 * after.norm());  // one model, within the codec's precision
  }
}
