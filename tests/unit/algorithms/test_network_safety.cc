// Network safety of the algorithm layer: a neighbour's message that cannot be applied is rejected with
// the node's whole state unchanged; edges are keyed by (id, incarnation) and a restart is drop + add.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/support/precision.h"
#include "algorithms/mixing.h"
#include "cases.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

Bytes encodeWith(const compress::Compressor& c, const Vec& v) {
  compress::Encoded e;
  Rng rng(5);
  c.encode(algo::detail::view(v), rng, e);
  return e.bytes;
}

// Every corruption of `good` that a decoder must refuse (see the brief in the test below).
std::vector<Bytes> corruptions(const Bytes& good, const compress::CompressorSpec& wire, Eigen::Index d,
                               std::mt19937_64& gen) {
  std::vector<Bytes> bad;
  for (int k = 0; k < 30; ++k) bad.emplace_back(good.begin(), good.begin() + static_cast<long>(gen() % good.size()));
  for (int k = 0; k < 10; ++k) {
    Bytes b = good;
    for (std::size_t n = 1 + gen() % 16; n > 0; --n) b.push_back(std::byte(gen()));
    bad.push_back(b);
  }
  const auto c = compress::makeCompressor(wire);
  const Vec v = Vec::LinSpaced(d, -1.0, 2.0);
  for (Eigen::Index dd : {d - 1, d + 1, 2 * d}) bad.push_back(encodeWith(*c, Vec::LinSpaced(dd, -1.0, 2.0)));
  // Wrong codec, right dimension.
  for (const char* other : {"fp32", "sign", "topk", "qsgd"})
    if (other != wire.name) bad.push_back(encodeWith(*compress::makeCompressor({.name = other}), v));
  // Non-finite values.
  constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  if (wire.name == "fp32") {
    for (float f : {float(nan), float(inf), -float(inf)})
      for (int k = 0; k < 5; ++k) {
        Bytes b = good;
        std::memcpy(b.data() + compress::kCodecHeaderBytes + 4 * (gen() % static_cast<std::size_t>(d)), &f, 4);
        bad.push_back(b);
      }
  } else if (wire.name == "topk") {
    // topk's encoder cannot take NaN (its selection asserts), so write non-finite values over the last
    // kept value, which is the payload's last 4 bytes.
    for (float f : {float(nan), float(inf), -float(inf)}) {
      Bytes b = good;
      std::memcpy(b.data() + b.size() - 4, &f, 4);
      bad.push_back(b);
    }
  } else {
    Vec x = v;
    x[d / 2] = inf;
    bad.push_back(encodeWith(*c, x));
    bad.push_back(encodeWith(*c, Vec::Constant(d, nan)));
    bad.push_back(encodeWith(*c, Vec::Constant(d, -inf)));
  }
  // Every single-bit flip in the codec header.
  for (std::size_t byte = 0; byte < compress::kCodecHeaderBytes; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      Bytes b = good;
      b[byte] ^= std::byte(1u << bit);
      bad.push_back(b);
    }
  return bad;
}

}  // namespace

TEST_CASE("Must show 1: a corrupt neighbour message is rejected and leaves the node bit-identical") {
  const Problem p = makeRidge(4, 12, 20, 1e-2, 21);
  std::mt19937_64 gen(77);
  for (const AlgoCase& c : allCases()) {
    INFO(c.algo);
    CaseEnv env(c, p, 0.5 / p.smoothness());
    MiniNet net(4, env.factory());
    for (Round t = 0; t < 6; ++t) net.round(t);

    // Round 6 by hand at node 0: everyone prepares, then node 0 is offered corrupted rounds.
    std::map<PeerId, compress::Encoded> out;
    for (auto& [id, node] : net.nodes()) node->beginRound(6, out[id]);
    algo::Node& n0 = *net.nodes().at(0);
    const auto& row = net.row(0);
    const PeerId victim = row.neighbors.front().first;
    auto msgsWith = [&](std::span<const std::byte> payload, Incarnation inc) {
      std::vector<algo::Incoming> m;
      for (const auto& [j, w] : row.neighbors)
        m.push_back(j == victim ? algo::Incoming{j, inc, payload} : algo::Incoming{j, 0, out[j].view()});
      return m;
    };
    const Bytes before = saveAlgo(n0.algorithm());
    const Vec x = n0.algorithm().x();

    auto expectRejected = [&](const std::vector<algo::Incoming>& m) {
      try {
        n0.endRound(6, m, row);
        FAIL("corrupt message was applied");
      } catch (const algo::RejectedMessage& e) {
        CHECK(e.from == victim);
        CHECK(std::string(e.what()).find("message from " + std::to_string(victim) + " rejected: ") == 0);
      }
      REQUIRE(saveAlgo(n0.algorithm()) == before);
      REQUIRE(n0.algorithm().x().cwiseEqual(x).all());
    };
    const auto bad = corruptions(out[victim].bytes, c.wire, static_cast<Eigen::Index>(p.dim()), gen);
    for (std::size_t k = 0; k < bad.size(); ++k) {
      INFO("corruption " << k);
      expectRejected(msgsWith(bad[k], 0));
    }
    if (!n0.algorithm().stateless()) {
      expectRejected(msgsWith(out[victim].view(), 1));
      expectRejected(msgsWith(out[victim].view(), 7));
    }
    // The intact round still applies afterwards.
    CHECK_NOTHROW(n0.endRound(6, msgsWith(out[victim].view(), 0), row));
    CHECK(saveAlgo(n0.algorithm()) != before);
  }
}

TEST_CASE("replica methods: a missing message is a ProtocolError - not a rejection - and changes nothing") {
  const Problem p = makeRidge(4, 12, 20, 1e-2, 22);
  for (const AlgoCase& c : allCases()) {
    CaseEnv env(c, p, 0.5 / p.smoothness());
    MiniNet net(4, env.factory());
    net.round(0);
    net.round(1);
    std::map<PeerId, compress::Encoded> out;
    for (auto& [id, node] : net.nodes()) node->beginRound(2, out[id]);
    algo::Node& n0 = *net.nodes().at(0);
    std::vector<algo::Incoming> m{{net.row(0).neighbors.back().first, 0, out[net.row(0).neighbors.back().first].view()}};
    const Bytes before = saveAlgo(n0.algorithm());
    INFO(c.algo);
    if (n0.algorithm().stateless()) {
      CHECK_NOTHROW(n0.endRound(2, m, net.row(0)));  // replace-with-own
    } else {
      try {
        n0.endRound(2, m, net.row(0));
        FAIL("applied a round with a missing message");
      } catch (const algo::RejectedMessage&) {
        FAIL("a missing message is not a rejected one");
      } catch (const ProtocolError&) {
      }
      CHECK(saveAlgo(n0.algorithm()) == before);
    }
  }
}

TEST_CASE("edges: addEdge on an existing id throws - dropEdge needs the exact key") {
  const Problem p = makeRidge(2, 6, 10, 1e-2, 23);
  for (const AlgoCase& c : allCases()) {
    INFO(c.algo);
    CaseEnv env(c, p, 0.1);
    auto a = env.make(0);
    auto& alg = a->algorithm();
    const std::vector<Real> pub(p.dim(), 0.0f);
    alg.addEdge({3, 1}, alg.publicState());
    alg.addEdge({1, 0}, pub);
    if (alg.stateless()) {
      CHECK(alg.edges().empty());
      continue;
    }
    CHECK_THROWS_AS(alg.addEdge({3, 1}, pub), ProtocolError);
    CHECK_THROWS_AS(alg.addEdge({3, 2}, pub), ProtocolError);
    CHECK(alg.edges() == std::vector<algo::EdgeKey>{{1, 0}, {3, 1}});
    alg.dropEdge({3, 2});  // another life of 3: no-op
    alg.dropEdge({9, 0});  // unknown: no-op
    CHECK(alg.edgeCount() == 2);
    alg.dropEdge({3, 1});
    alg.addEdge({3, 2}, pub);
    CHECK(alg.edges() == std::vector<algo::EdgeKey>{{1, 0}, {3, 2}});
  }
}

TEST_CASE("restart: drop + add with a new incarnation keeps sum_i d_i = 0 for Prox-LEAD") {
  const Problem p = makeL1Logistic(6, 10, 20, 0.02, 1e-3, 24);
  const AlgoCase c = allCases().back();
  REQUIRE(c.algo == "prox_lead");
  CaseEnv env(c, p, 1.0 / p.smoothness());
  MiniNet net(6, env.factory());
  Round t = 0;
  for (; t < 200; ++t) net.round(t);
  REQUIRE(net.nodes().at(2)->algorithm().dual()->norm() > 1e-6);  // node 2's dual share is far from 0 ...
  net.restart(2, 1, env.make(2, 1));
  CHECK(net.nodes().at(1)->algorithm().edges() == std::vector<algo::EdgeKey>{{0, 0}, {2, 1}});
  CHECK(net.dualSum().norm() < gossip::precision::tol(1e-12, 1e-5));  // ... but its sum stays 0 through the restart
  for (; t < 3000; ++t) net.round(t);
  CHECK(net.dualSum().norm() < gossip::precision::tol(1e-12, 1e-5));
  CHECK(net.maxRelError(p.solve()) < gossip::precision::tol(1e-8, 1e-4));  // and the network still reaches the exact optimum
}

TEST_CASE("restart: a new incarnation draws a different random stream - incarnation 0 keeps the old one") {
  CHECK(algo::roundSeed(9, 3, 0, 17) == deriveSeed({9, 3, 17}));
  CHECK(algo::roundSeed(9, 3, 1, 17) != algo::roundSeed(9, 3, 0, 17));
  CHECK(algo::roundSeed(9, 3, 1, 17) != algo::roundSeed(9, 3, 2, 17));
  const Problem p = makeRidge(2, 30, 10, 1e-2, 25);
  for (const AlgoCase& c : allCases()) {
    if (c.wire.name == "fp32" || c.wire.name == "topk") continue;  // deterministic codecs
    INFO(c.algo);
    CaseEnv env(c, p, 0.1);
    auto old = env.make(0, 0), fresh = env.make(0, 1);
    compress::Encoded a, b;
    old->beginRound(0, a);
    fresh->beginRound(0, b);
    CHECK(a.bytes != b.bytes);
  }
}
