// LGC in the round (algorithms/lgc_round.h) and its learner (algorithms/lgc_learner.h). Checked: the learner
// finds a planted subspace; node 0's basis is exactly what a learner fed the window sums of the top-k
// messages it sent and received computes, and it travels in its round-W message; every node codes from round
// W + delay on; CHOCO with lgc reaches exact CHOCO's fixed point; a learner that crashes before its basis
// spreads leaves everyone on top-k with nothing rejected; a restarted node gets the basis with its
// neighbours' coded values; bad trailers are refused with the model unchanged; a checkpoint resumes byte
// for byte, mid warm-up included.
#include <doctest/doctest.h>

#include <set>

#include "tests/support/precision.h"
#include "algorithms/algorithm.h"
#include "algorithms/lgc_learner.h"
#include "algorithms/lgc_round.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "compressors/lgc.h"
#include "gossip_only.h"
#include "harness.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

constexpr Eigen::Index kDim = 40;
constexpr std::uint32_t kNodes = 6;  // MiniNet's ring: diameter 3
constexpr std::uint32_t kDiameter = 3;
constexpr std::uint32_t kBlock = 8, kCodes = 2;

std::unique_ptr<compress::Compressor> lgc(std::uint32_t k = 4) {
  compress::CompressorSpec spec;
  spec.name = "lgc";
  spec.k = k;
  spec.block = kBlock;
  spec.codes = kCodes;
  return compress::makeCompressor(spec);
}

algo::AlgorithmParams params(const std::string& name, std::uint64_t warmup = 20, std::uint32_t delay = kDiameter) {
  algo::AlgorithmParams p;
  p.name = name;
  p.gamma = 0.3;
  p.eta = 0.5;
  p.lgc_warmup = warmup;
  p.lgc_window = 5;
  p.lgc_delay = delay;
  return p;
}

const algo::LgcRound& round(algo::Node* n) { return dynamic_cast<const algo::LgcRound&>(n->algorithm()); }

Vec targetOf(PeerId id) { return gossipStart(id + 50, kDim); }

std::unique_ptr<algo::Node> trainedNode(const algo::AlgorithmParams& p, const compress::Compressor& c, PeerId id,
                                        double lr) {
  algo::NodeSchedule sched;
  sched.lr = [lr](Round) { return lr; };
  return std::make_unique<algo::Node>(id, algo::makeAlgorithm(p, c, id, gossipStart(id, kDim)),
                                      std::make_unique<PullTo>(targetOf(id)), std::move(sched));
}

MiniNet::Factory trained(const algo::AlgorithmParams& p, const compress::Compressor& c, double lr) {
  return [&p, &c, lr](PeerId id) { return trainedNode(p, c, id, lr); };
}

std::set<std::uint32_t> fingerprints(MiniNet& net) {
  std::set<std::uint32_t> s;
  for (auto& [id, n] : net.nodes()) s.insert(round(n).basis().fingerprint());
  return s;
}

std::size_t codingNodes(MiniNet& net) {
  std::size_t k = 0;
  for (auto& [id, n] : net.nodes()) k += round(n).coding();
  return k;
}

// The method's part of a message and its trailer's record count.
std::pair<std::span<const std::byte>, std::uint32_t> split(const compress::Encoded& e) {
  ByteReader footer(std::span<const std::byte>(e.bytes).last(12));
  footer.get<std::uint32_t>();  // the sender's basis
  const auto count = footer.get<std::uint32_t>();
  const auto length = footer.get<std::uint32_t>();
  return {std::span<const std::byte>(e.bytes).first(e.bytes.size() - 12 - length), count};
}

}  // namespace

TEST_CASE("lgc learner: the basis spans a planted subspace and is deterministic") {
  // Blocks drawn from a 2-dimensional subspace of R^8 plus small noise: the top-2 eigenvectors span it.
  Rng rng(1);
  Eigen::MatrixXd u = Eigen::MatrixXd::NullaryExpr(kBlock, kCodes, [&] { return rng.normal(); });
  u = Eigen::HouseholderQR<Eigen::MatrixXd>(u).householderQ() * Eigen::MatrixXd::Identity(kBlock, kCodes);
  algo::LgcLearner learner(kBlock, kCodes), again(kBlock, kCodes);
  CHECK(learner.basis().empty());
  for (int s = 0; s < 50; ++s) {
    Vec64 x(3 * kBlock + 5);  // three blocks and a tail that is ignored
    for (int k = 0; k < 3; ++k) {
      const Eigen::Vector2d a(3 * rng.normal(), rng.normal());
      x.segment(k * kBlock, kBlock) = u * a;
      for (std::uint32_t i = 0; i < kBlock; ++i) x(k * kBlock + i) += 1e-3 * rng.normal();
    }
    for (int i = 0; i < 5; ++i) x(3 * kBlock + i) = 100.0;
    learner.add(std::span<const double>(x.data(), static_cast<std::size_t>(x.size())));
    again.add(std::span<const double>(x.data(), static_cast<std::size_t>(x.size())));
  }
  CHECK(learner.samples() == 150);
  const auto b = learner.basis();
  REQUIRE(b.codes() == kCodes);
  Eigen::MatrixXd bm(kBlock, kCodes);
  for (std::uint32_t j = 0; j < kCodes; ++j)
    for (std::uint32_t i = 0; i < kBlock; ++i) bm(i, j) = b.cols()[j * kBlock + i];
  CHECK((bm.transpose() * bm - Eigen::MatrixXd::Identity(kCodes, kCodes)).norm() < 1e-6);
  CHECK((bm * bm.transpose() * u - u).norm() < 1e-3);  // the same subspace
  CHECK(again.basis() == b);
  // The checkpoint gives back the same second moments.
  Bytes saved;
  ByteWriter w(saved);
  learner.save(w);
  algo::LgcLearner loaded(kBlock, kCodes);
  ByteReader r(saved);
  loaded.load(r);
  r.expectEnd();
  CHECK(loaded.basis() == b);
  CHECK(loaded.samples() == 150);
}

TEST_CASE("lgc round: node 0 learns from the window sums of the messages it exchanged (DeepSqueeze: their differences) - coding starts at W + delay") {
  constexpr std::uint64_t kWarmup = 6;
  auto c = lgc();
  for (const std::string name : {"choco", "deepsqueeze"}) {
    CAPTURE(name);
    auto p = params(name, kWarmup, 1);
    p.lgc_window = 4;  // windows end after rounds 3 and 5 (the warm-up's end closes the last one)
    auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
    auto b = algo::makeAlgorithm(p, *c, 1, gossipStart(1, kDim));
    a->addEdge({1, 0}, b->publicState());
    b->addEdge({0, 0}, a->publicState());
    auto& ra = dynamic_cast<algo::LgcRound&>(*a);
    auto& rb = dynamic_cast<algo::LgcRound&>(*b);
    const topology::MixingRow rowA{0.5, {{1, 0.5}}}, rowB{0.5, {{0, 0.5}}};
    compress::CompressorSpec ts;
    ts.name = "topk";
    ts.k = 4;
    auto topk = compress::makeCompressor(ts);
    algo::LgcLearner ref(kBlock, kCodes);
    std::vector<double> sumA(kDim, 0.0), sumB(kDim, 0.0);
    Rng rng(3);
    for (Round t = 0; t < kWarmup + 4; ++t) {
      CAPTURE(t);
      const Vec ga = Vec::NullaryExpr(kDim, [&] { return rng.normal(); });
      const Vec gb = Vec::NullaryExpr(kDim, [&] { return rng.normal(); });
      compress::Encoded ma, mb;
      a->prepare(t, ga, 0.1, ma);
      b->prepare(t, gb, 0.1, mb);
      const auto [va, na] = split(ma);
      const auto [vb, nb] = split(mb);
      const auto codec = [](std::span<const std::byte> v) { return static_cast<compress::CodecId>(v[0]); };
      CHECK(codec(va) == (t < kWarmup + 1 ? compress::CodecId::TopK : compress::CodecId::Lgc));
      CHECK(codec(vb) == (t < kWarmup + 1 ? compress::CodecId::TopK : compress::CodecId::Lgc));
      CHECK(na == (t == kWarmup ? 1u : 0u));  // the learner's basis, once; node 1 forwards it to nobody new
      CHECK(nb == (t == kWarmup + 1 ? 1u : 0u));
      if (t == kWarmup) {
        REQUIRE_FALSE(ref.basis().empty());
        CHECK(ra.basis() == ref.basis());
        CHECK(rb.basis().empty());
      }
      if (t < kWarmup) {
        topk->decodeAdd(va, std::span<double>(sumA), 1.0);
        topk->decodeAdd(vb, std::span<double>(sumB), 1.0);
        if ((t + 1) % 4 == 0 || t + 1 == kWarmup) {
          if (name == "choco") {
            ref.add(sumA), ref.add(sumB);
          } else {  // DeepSqueeze: the neighbour's sum minus node 0's own
            std::vector<double> diff(kDim);
            for (std::size_t i = 0; i < diff.size(); ++i) diff[i] = sumB[i] - sumA[i];
            ref.add(diff);
          }
          std::fill(sumA.begin(), sumA.end(), 0.0), std::fill(sumB.begin(), sumB.end(), 0.0);
        }
      }
      const std::vector<algo::Incoming> toA{{1, 0, mb.view()}}, toB{{0, 0, ma.view()}};
      a->apply(t, toA, rowA);
      b->apply(t, toB, rowB);
    }
    CHECK(rb.basis() == ra.basis());
    CHECK(ra.coding());
    CHECK(rb.coding());
  }
}

TEST_CASE("lgc round: CHOCO with lgc reaches exact CHOCO's fixed point - every node codes with one basis") {
  auto c = lgc(8);
  auto exact = compress::makeCompressor({.name = "fp32"});
  const auto p = params("choco");
  MiniNet net(kNodes, trained(p, *c, 0.05)), ref(kNodes, trained(p, *exact, 0.05));
  for (Round t = 0; t < 2000; ++t) {
    net.round(t), ref.round(t);
    if (t == p.lgc_warmup + kDiameter - 1) CHECK(codingNodes(net) == 0);
    if (t == p.lgc_warmup + kDiameter) CHECK(codingNodes(net) == kNodes);
  }
  CHECK(fingerprints(net).size() == 1);
  auto refNodes = ref.nodes();
  for (auto& [id, n] : net.nodes()) {
    const Vec& want = refNodes.at(id)->algorithm().x();
    CHECK((n->algorithm().x() - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
  }
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("lgc round: a learner that crashes before its basis spreads leaves everyone on top-k - nothing rejected") {
  auto c = lgc();
  for (const std::string name : {"deepsqueeze", "choco"}) {
    CAPTURE(name);
    const auto p = params(name);
    MiniNet net(kNodes, trained(p, *c, 0.05));
    for (Round t = 0; t < p.lgc_warmup; ++t) net.round(t);
    net.crash(0);
    for (Round t = p.lgc_warmup; t < p.lgc_warmup + kDiameter + 20; ++t) net.round(t);
    CHECK(codingNodes(net) == 0);
    CHECK(fingerprints(net) == std::set<std::uint32_t>{compress::LgcBasis().fingerprint()});
    for (auto& [id, n] : net.nodes()) CHECK(n->algorithm().x().allFinite());
    CHECK(net.rejectedTotal() == 0);
  }
}

TEST_CASE("lgc round: a node restarted without its state decodes its neighbours' coded values at once") {
  auto c = lgc();
  const auto p = params("choco");
  MiniNet net(kNodes, trained(p, *c, 0.05));
  const Round start = p.lgc_warmup + kDiameter + 5;
  for (Round t = 0; t < start; ++t) net.round(t);
  REQUIRE(codingNodes(net) == kNodes);
  algo::AlgorithmParams fresh = p;
  fresh.incarnation = 1;
  net.restart(4, 1, trainedNode(fresh, *c, 4, 0.05));
  CHECK_FALSE(round(net.nodes().at(4)).coding());
  net.round(start);  // its neighbours' messages are coded; a rejection would throw here (CHOCO)
  net.round(start + 1);
  CHECK(round(net.nodes().at(4)).coding());
  for (Round t = start + 2; t < start + 30; ++t) net.round(t);
  CHECK(fingerprints(net).size() == 1);
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("lgc round: a node that missed the flood gets the basis again from its neighbours the round after") {
  // DeepSqueeze tolerates lost messages: node 3 (3 hops from node 0) loses every message of the flood.
  auto c = lgc();
  const auto p = params("deepsqueeze");
  MiniNet net(kNodes, trained(p, *c, 0.05));
  const Round w = p.lgc_warmup, sw = w + kDiameter;
  for (Round t = 0; t < sw + 3; ++t) {
    net.round(t, [&](PeerId, PeerId to, Round r) { return to == 3 && r >= w && r < sw; });
    CAPTURE(t);
    if (t == sw - 1) CHECK(round(net.nodes().at(3)).basis().empty());
    // Round sw: node 3's message says it has no basis; its neighbours append theirs in round sw + 1.
    if (t == sw) CHECK_FALSE(round(net.nodes().at(3)).coding());
  }
  CHECK(codingNodes(net) == kNodes);
  CHECK(fingerprints(net).size() == 1);
  for (auto& [id, n] : net.nodes()) CHECK(n->algorithm().x().allFinite());
}

TEST_CASE("lgc round: a message with a bad trailer is refused with the model unchanged") {
  auto c = lgc();
  const auto p = params("deepsqueeze", 0, 1);  // no warm-up: node 0 sends its (empty-data) basis at once
  auto a = algo::makeAlgorithm(p, *c, 1, gossipStart(1, kDim));
  auto b = algo::makeAlgorithm(params("deepsqueeze", 2, 1), *c, 0, gossipStart(0, kDim));
  const Vec g = Vec::Zero(kDim);
  // Node 0 (b) learns over two rounds and sends its basis in round 2; a is given it as if in round 0.
  compress::Encoded mb;
  for (Round t = 0; t < 3; ++t) {
    const Vec gt = Vec::NullaryExpr(kDim, [t](Eigen::Index i) { return std::sin(double(i + 7 * t)); });
    b->prepare(t, gt, 0.1, mb);
    compress::Encoded ma;
    a->prepare(t, g, 0.1, ma);
    const std::vector<algo::Incoming> toB{{1, 0, ma.view()}};
    b->apply(t, toB, topology::MixingRow{0.5, {{1, 0.5}}});
  }
  REQUIRE(split(mb).second == 1);
  const topology::MixingRow row{0.5, {{0, 0.5}}};
  const Vec x0 = a->x();
  auto refused = [&](Bytes bytes, const char* what) {
    CAPTURE(what);
    const std::vector<algo::Incoming> msgs{{0, 0, bytes}};
    CHECK_THROWS_AS(a->apply(3, msgs, row), algo::RejectedMessage);
    CHECK(a->x().cwiseEqual(x0).all());
    CHECK_FALSE(dynamic_cast<algo::LgcRound&>(*a).coding());
  };
  refused(Bytes(mb.bytes.begin(), mb.bytes.begin() + 4), "shorter than the footer");
  Bytes longTrailer = mb.bytes;
  longTrailer[longTrailer.size() - 1] = std::byte{0x7f};
  refused(longTrailer, "trailer longer than the message");
  Bytes two = mb.bytes;
  two[two.size() - 8] = std::byte{2};
  refused(two, "two bases");
  Bytes spoiled = mb.bytes;
  spoiled[split(mb).first.size() + 20] ^= std::byte{1};
  refused(spoiled, "a basis whose fingerprint does not match");
  const std::vector<algo::Incoming> ok{{0, 0, mb.view()}};
  CHECK_NOTHROW(a->apply(3, ok, row));
  CHECK(dynamic_cast<algo::LgcRound&>(*a).basis() == dynamic_cast<algo::LgcRound&>(*b).basis());
}

TEST_CASE("lgc round: a checkpoint resumes byte for byte - mid warm-up and after the switch") {
  auto c = lgc();
  const auto p = params("choco", 8, 1);
  const topology::MixingRow rowA{0.5, {{1, 0.5}}}, rowB{0.5, {{0, 0.5}}};
  for (const Round cut : {Round{5}, Round{12}}) {
    CAPTURE(cut);
    auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
    auto b = algo::makeAlgorithm(p, *c, 1, gossipStart(1, kDim));
    a->addEdge({1, 0}, b->publicState());
    b->addEdge({0, 0}, a->publicState());
    std::unique_ptr<algo::Algorithm> a2, b2;
    auto step = [&](algo::Algorithm& x, algo::Algorithm& y, Round t, compress::Encoded& mx, compress::Encoded& my) {
      const Vec gx = Vec::NullaryExpr(kDim, [t](Eigen::Index i) { return std::sin(double(i * 3 + t)); });
      const Vec gy = Vec::NullaryExpr(kDim, [t](Eigen::Index i) { return std::cos(double(i * 5 + t)); });
      x.prepare(t, gx, 0.1, mx);
      y.prepare(t, gy, 0.1, my);
      const std::vector<algo::Incoming> toX{{1, 0, my.view()}}, toY{{0, 0, mx.view()}};
      x.apply(t, toX, rowA);
      y.apply(t, toY, rowB);
    };
    for (Round t = 0; t < 20; ++t) {
      if (t == cut) {
        auto copy = [&](const algo::Algorithm& from, PeerId id) {
          Bytes saved;
          ByteWriter w(saved);
          from.save(w);
          auto to = algo::makeAlgorithm(p, *c, id, Vec::Zero(kDim));
          ByteReader r(saved);
          to->load(r);
          r.expectEnd();
          Bytes again;
          ByteWriter w2(again);
          to->save(w2);
          CHECK(again == saved);
          return to;
        };
        a2 = copy(*a, 0), b2 = copy(*b, 1);
      }
      compress::Encoded ma, mb, ma2, mb2;
      step(*a, *b, t, ma, mb);
      if (a2) {
        step(*a2, *b2, t, ma2, mb2);
        CHECK(ma2.bytes == ma.bytes);
        CHECK(mb2.bytes == mb.bytes);
      }
    }
    CHECK(a2->x().cwiseEqual(a->x()).all());
  }
  // A truncated checkpoint is refused with the model unchanged.
  auto a = algo::makeAlgorithm(p, *c, 0, gossipStart(0, kDim));
  Bytes saved;
  ByteWriter w(saved);
  a->save(w);
  auto other = algo::makeAlgorithm(p, *c, 0, gossipStart(3, kDim));
  const Vec before = other->x();
  for (std::size_t cut : {std::size_t{3}, saved.size() / 2, saved.size() - 1}) {
    ByteReader shortReader(std::span<const std::byte>(saved).first(cut));
    CHECK_THROWS_AS(other->load(shortReader), DecodeError);
    CHECK(other->x().cwiseEqual(before).all());
  }
}

TEST_CASE("lgc works with choco and deepsqueeze only") {
  auto c = lgc();
  for (const std::string name : {"dpsgd", "lsgd", "lead", "nids", "codistill"})
    CHECK_THROWS_AS(algo::makeAlgorithm(params(name), *c, 0, Vec::Zero(kDim)), ConfigError);
  CHECK(algo::makeAlgorithm(params("deepsqueeze"), *c, 0, Vec::Zero(kDim))->name() == "deepsqueeze");
}
