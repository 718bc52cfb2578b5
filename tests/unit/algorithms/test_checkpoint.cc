// Checkpoints of the algorithm layer (Node::save/load continue bit-identically; a bad state is refused
// with the object unchanged) and divergence detection.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <utility>

#include "cases.h"
#include "training/external_gradient.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

Bytes saveNode(const algo::Node& n) {
  Bytes b;
  ByteWriter w(b);
  n.save(w);
  return b;
}

void loadNode(algo::Node& n, const Bytes& b) {
  ByteReader r(b, "node state");
  n.load(r);
  r.expectEnd();
}

void loadAlgo(algo::Algorithm& a, std::span<const std::byte> b) {
  ByteReader r(b, "algorithm state");
  a.load(r);
}

}  // namespace

TEST_CASE("checkpoint: save - load into fresh nodes - continue: trajectories are bit-identical") {
  const Problem p = makeL1Logistic(5, 10, 20, 0.02, 1e-3, 31);
  for (const AlgoCase& c : allCases()) {
    INFO(c.algo);
    CaseEnv env(c, p, 0.5 / p.smoothness());
    MiniNet a(5, env.factory()), b(5, env.factory());
    Round t = 0;
    for (; t < 7; ++t) a.round(t);
    for (auto& [id, node] : a.nodes()) loadNode(*b.nodes().at(id), saveNode(*node));
    for (auto& [id, node] : a.nodes()) {
      CHECK(b.nodes().at(id)->gradientCalls() == node->gradientCalls());
      CHECK(b.nodes().at(id)->lastLoss() == node->lastLoss());
    }
    for (; t < 30; ++t) {
      a.round(t);
      b.round(t);
    }
    for (auto& [id, node] : a.nodes()) {
      CHECK(b.nodes().at(id)->algorithm().x().cwiseEqual(node->algorithm().x()).all());
      CHECK(saveNode(*b.nodes().at(id)) == saveNode(*node));
    }
  }
}

TEST_CASE("checkpoint: truncated - foreign or wrong-dimension state throws DecodeError and changes nothing") {
  const Problem p = makeRidge(4, 8, 20, 1e-2, 32);
  const Problem q = makeRidge(4, 9, 20, 1e-2, 32);  // another dimension
  const auto cases = allCases();
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const AlgoCase& c = cases[k];
    INFO(c.algo);
    CaseEnv env(c, p, 0.5 / p.smoothness()), other(cases[(k + 1) % cases.size()], p, 0.1), wide(c, q, 0.1);
    MiniNet net(4, env.factory()), otherNet(4, other.factory()), wideNet(4, wide.factory());
    for (Round t = 0; t < 4; ++t) {
      net.round(t);
      otherNet.round(t);
      wideNet.round(t);
    }
    algo::Algorithm& target = net.nodes().at(0)->algorithm();
    const Bytes before = saveAlgo(target);
    const Bytes source = saveAlgo(net.nodes().at(1)->algorithm());  // valid, but a different state
    for (std::size_t len = 0; len < source.size(); len += 1 + len / 8) {
      CHECK_THROWS_AS(loadAlgo(target, std::span(source).first(len)), DecodeError);
      REQUIRE(saveAlgo(target) == before);
    }
    CHECK_THROWS_AS(loadAlgo(target, saveAlgo(otherNet.nodes().at(1)->algorithm())), DecodeError);
    CHECK(saveAlgo(target) == before);
    CHECK_THROWS_AS(loadAlgo(target, saveAlgo(wideNet.nodes().at(1)->algorithm())), DecodeError);
    CHECK(saveAlgo(target) == before);
    // The node level is transactional too, and the intact state still loads.
    algo::Node& n0 = *net.nodes().at(0);
    const Bytes nodeBefore = saveNode(n0), nodeSource = saveNode(*net.nodes().at(1));
    CHECK_THROWS_AS(loadNode(n0, Bytes(nodeSource.begin(), nodeSource.end() - 1)), DecodeError);
    CHECK(saveNode(n0) == nodeBefore);
    loadAlgo(target, source);
    CHECK(saveAlgo(target) == source);
  }
  // lead and prox_lead share a layout, but one's state is not the other's.
  CaseEnv lead(cases[4], p, 0.1), prox(cases[5], p, 0.1);
  auto a = lead.make(0), b = prox.make(0);
  CHECK_THROWS_AS(loadAlgo(b->algorithm(), saveAlgo(a->algorithm())), DecodeError);
}

TEST_CASE("divergence: a huge step size ends with DivergedError naming the round") {
  const Problem p = makeRidge(4, 8, 20, 1e-2, 33);
  for (const AlgoCase& c : allCases()) {
    INFO(c.algo);
    CaseEnv env(c, p, 1e30);
    MiniNet net(4, env.factory());
    std::string msg;
    try {
      for (Round t = 0; t < 200; ++t) net.round(t);
    } catch (const DivergedError& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find("training diverged at round ") == 0);
    CHECK(msg.find("lower algorithm.lr") != std::string::npos);
    CHECK((msg.find("algorithm.gamma") != std::string::npos) == (c.algo == "choco"));
  }
  static_assert(std::is_base_of_v<ConfigError, DivergedError>);  // so the CLI exits 2
}

TEST_CASE("divergence: with a zero gradient (the bridge's model mode) the encode is the check of x") {
  // The trainer stepped x itself and the gradient is zero, so no gradient is there to blow up first: the
  // pass that writes the frame (D-PSGD fp32: fp32EncodeChecked; DeepSqueeze: the error feedback's add,
  // fused into top-k's selection or not) is the only check of x, and Node turns its refusal into the same
  // error as its own check. 40,001 values: top-k's sampled selection, the first, a middle and the last
  // (in the tail after the 32-value blocks).
  constexpr Eigen::Index dim = 40001;
  using Case = std::pair<std::string, std::string>;
  for (const auto& [method, codecName] : {Case{"dpsgd", "fp32"}, Case{"deepsqueeze", "topk"}, Case{"deepsqueeze", "fp16"}})
  for (const Eigen::Index at : {Eigen::Index{0}, Eigen::Index{20001}, dim - 1}) {
    CAPTURE(method);
    CAPTURE(codecName);
    CAPTURE(at);
    const auto codec = compress::makeCompressor({.name = codecName});
    algo::AlgorithmParams params;
    params.name = method;
    auto gradient = std::make_unique<training::ExternalGradient>(dim);
    training::ExternalGradient& est = *gradient;
    algo::Node node(0, algo::makeAlgorithm(params, *codec, 0, Vec::Ones(dim)), std::move(gradient), {});
    REQUIRE(node.algorithm().prepareChecksFinite() == !kRealIsDouble);
    compress::Encoded out;
    est.supplyZero(0.5);
    node.beginRound(0, out);  // a finite model goes out
    node.algorithm().x()[at] = std::numeric_limits<Real>::quiet_NaN();
    est.supplyZero(0.5);
    std::string msg;
    try {
      node.beginRound(1, out);
    } catch (const DivergedError& e) {
      msg = e.what();
    }
    CHECK(msg.find("training diverged at round 1: the model became non-finite") == 0);
  }
}

TEST_CASE("divergence: one NaN or inf anywhere in the model is caught before it is sent") {
  // D-PSGD with top-k (Node's own pass over x) and with fp32, whose encode checks x in the pass that writes
  // the frame (Algorithm::prepareChecksFinite); an odd index 5 and the last value 7 of 8 too.
  const Problem p = makeRidge(4, 8, 20, 1e-2, 33);
  const compress::CompressorSpec fp32{.name = "fp32"};
  for (const AlgoCase& c : {allCases()[0], AlgoCase{"dpsgd", fp32, fp32}})
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    for (const Eigen::Index at : {Eigen::Index{0}, Eigen::Index{5}, Eigen::Index{7}}) {
      CAPTURE(c.spec.name);
      CAPTURE(bad);
      CAPTURE(at);
      CaseEnv env(c, p, 0.1);
      MiniNet net(4, env.factory());
      net.round(0);
      net.nodes().at(2)->algorithm().x()[at] = static_cast<Real>(bad);
      std::string msg;
      try {
        net.round(1);
      } catch (const DivergedError& e) {
        msg = e.what();
      }
      CHECK(msg.find("training diverged at round 1: the model became non-finite") == 0);
    }
  }
}
