// lsgd (algorithms/leader.h): each round against the update rule computed here from the models and losses
// before the round, D-PSGD bit for bit when the pull is 0, the pull only in its period's rounds, bad loss
// trailers refused with the model untouched, and training that converges.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "tests/support/precision.h"
#include "algorithms/algorithm.h"
#include "algorithms/leader.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "gossip_only.h"
#include "harness.h"

using namespace gossip;
using namespace gossip::testing;

namespace {

constexpr Eigen::Index kDim = 40;
// Gradients given to prepare() directly: an algorithm may read g until the round's apply() (algorithm.h), so
// they must outlive it, as Node's own gradient does.
const Vec& zeroGradient() {
  static const Vec g = Vec::Zero(kDim);
  return g;
}
const Vec& onesGradient() {
  static const Vec g = Vec::Ones(kDim);
  return g;
}
constexpr double kLr = 0.1;

Vec targetOf(PeerId id) { return gossipStart(id + 50, kDim) * (0.2 + 0.3 * id); }

MiniNet::Factory nodes(const algo::AlgorithmParams& params, const compress::Compressor& c) {
  return [&params, &c](PeerId id) {
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return kLr; };
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(params, c, id, gossipStart(id, kDim)),
                                        std::make_unique<PullTo>(targetOf(id)), std::move(sched));
  };
}

const algo::Lsgd& lsgd(algo::Node* n) { return dynamic_cast<const algo::Lsgd&>(n->algorithm()); }

// Checks round t of net against the rule; returns how many nodes were pulled (leader != self).
int checkRound(MiniNet& net, Round t, const compress::Compressor& c, double lambda, bool pullRound) {
  std::map<PeerId, Vec> x, y, g;
  std::map<PeerId, double> loss;
  for (auto& [id, n] : net.nodes()) {
    x[id] = n->algorithm().x();
    y[id] = sentValue(c, x[id]);
    g[id] = x[id] - targetOf(static_cast<PeerId>(id));
    const double now = 0.5 * g[id].squaredNorm();
    const double before = lsgd(n).reportedLoss();
    loss[id] = std::isnan(before) ? now : (1.0 - algo::Lsgd::kLossAverage) * before + algo::Lsgd::kLossAverage * now;
  }
  net.round(t);
  int pulled = 0;
  for (auto& [id, n] : net.nodes()) {
    CAPTURE(id);
    const auto& row = net.row(id);
    PeerId leader = id;
    for (const auto& [j, w] : row.neighbors)
      if (loss.at(j) < loss.at(leader) || (loss.at(j) == loss.at(leader) && j < leader)) leader = j;
    Vec want = row.self * y.at(id) - kLr * g.at(id);
    for (const auto& [j, w] : row.neighbors) want += w * y.at(j);
    if (pullRound && leader != id) {
      want -= kLr * lambda * (y.at(id) - y.at(leader));
      ++pulled;
    }
    CHECK(lsgd(n).lastLeader() == leader);
    CHECK(lsgd(n).reportedLoss() == doctest::Approx(loss.at(id)).epsilon(1e-12));
    CHECK((n->algorithm().x() - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
  }
  return pulled;
}

}  // namespace

TEST_CASE("lsgd: each round is sum_j w_ij C(x_j) - lr g_i - lr lambda (C(x_i) - C(x_leader)) - leader = lowest loss nearby") {
  algo::AlgorithmParams params{.name = "lsgd", .leader_pull = 0.5};
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.25});
  MiniNet net(6, nodes(params, *c));
  int pulled = 0;
  for (Round t = 0; t < 6; ++t) pulled += checkRound(net, t, *c, 0.5, true);
  CHECK(pulled > 0);  // some node had a better neighbour: the pull was exercised
}

TEST_CASE("lsgd: the pull acts only in rounds t % leader_period == 0") {
  algo::AlgorithmParams params{.name = "lsgd", .leader_pull = 0.5, .leader_period = 3};
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.25});
  MiniNet net(6, nodes(params, *c));
  int pulledOff = 0, pulledOn = 0;
  for (Round t = 0; t < 7; ++t) (t % 3 == 0 ? pulledOn : pulledOff) += checkRound(net, t, *c, 0.5, t % 3 == 0);
  CHECK(pulledOn > 0);
  CHECK(pulledOff == 0);
}

TEST_CASE("lsgd with leader_pull = 0 is D-PSGD bit for bit") {
  // With fp32, D-PSGD mixes in place and lsgd (which needs the old x for its pull) aside: the same models.
  for (const char* codec : {"topk", "fp32"}) {
    CAPTURE(codec);
    algo::AlgorithmParams lp{.name = "lsgd", .leader_pull = 0.0};
    algo::AlgorithmParams dp{.name = "dpsgd"};
    auto c = compress::makeCompressor({.name = codec, .ratio = 0.25});
    MiniNet a(5, nodes(lp, *c)), b(5, nodes(dp, *c));
    for (Round t = 0; t < 30; ++t) {
      a.round(t);
      b.round(t);
    }
    for (auto& [id, n] : a.nodes()) CHECK(n->algorithm().x().cwiseEqual(b.nodes().at(id)->algorithm().x()).all());
  }
}

TEST_CASE("lsgd: a message without a finite loss trailer is rejected and the model is unchanged") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const Vec x0 = gossipStart(0, kDim);
  auto a = algo::makeAlgorithm({.name = "lsgd"}, *c, 0, x0);
  auto b = algo::makeAlgorithm({.name = "lsgd"}, *c, 1, gossipStart(1, kDim));
  a->noteLoss(1.0);
  b->noteLoss(0.5);
  compress::Encoded ma, mb;
  a->prepare(0, zeroGradient(), kLr, ma);
  b->prepare(0, zeroGradient(), kLr, mb);
  topology::MixingRow row{.self = 0.5, .neighbors = {{1, 0.5}}};
  Bytes bad(mb.bytes.begin(), mb.bytes.end());
  const double nan = std::nan("");
  std::memcpy(bad.data() + bad.size() - sizeof nan, &nan, sizeof nan);
  for (std::span<const std::byte> payload : {std::span<const std::byte>(bad), mb.view().first(4)}) {
    const algo::Incoming m{1, 0, payload};
    CHECK_THROWS_AS(a->apply(0, std::span<const algo::Incoming>(&m, 1), row), algo::RejectedMessage);
    CHECK(a->x().cwiseEqual(x0).all());
  }
  const algo::Incoming good{1, 0, mb.view()};
  a->apply(0, std::span<const algo::Incoming>(&good, 1), row);  // b (loss 0.5) leads: a is pulled
  const Vec y1 = gossipStart(1, kDim).cast<float>().cast<Real>();
  const Vec y0 = x0.cast<float>().cast<Real>();
  const Vec want = 0.5 * y0 + 0.5 * y1 - kLr * 0.1 * (y0 - y1);
  // The same sum in another order: equal to the state's rounding (float32: a few ulps).
  CHECK((a->x() - want).norm() <= gossip::precision::tol(1e-12, 1e-6) * want.norm());
}

TEST_CASE("lsgd: after a rejected payload the engine's retry without it pulls once - not twice") {
  // Node 0 with neighbours 1 (the leader) and 2, whose codec payload is corrupt but whose trailer is fine:
  // the mix rejects 2 after the leader's model was decoded; the retry without 2 must be the plain rule.
  auto c = compress::makeCompressor({.name = "fp32"});
  const Vec x0 = gossipStart(0, kDim);
  auto a = algo::makeAlgorithm({.name = "lsgd"}, *c, 0, x0);
  auto b = algo::makeAlgorithm({.name = "lsgd"}, *c, 1, gossipStart(1, kDim));
  auto d = algo::makeAlgorithm({.name = "lsgd"}, *c, 2, gossipStart(2, kDim));
  a->noteLoss(1.0);
  b->noteLoss(0.5);
  d->noteLoss(2.0);
  compress::Encoded ma, mb, md;
  a->prepare(0, zeroGradient(), kLr, ma);
  b->prepare(0, zeroGradient(), kLr, mb);
  d->prepare(0, zeroGradient(), kLr, md);
  Bytes corrupt(md.bytes.begin(), md.bytes.end());
  corrupt[0] = std::byte{0xEE};  // an unknown codec id in the payload's header
  const topology::MixingRow row{.self = 0.5, .neighbors = {{1, 0.25}, {2, 0.25}}};
  const std::vector<algo::Incoming> both{{1, 0, mb.view()}, {2, 0, corrupt}};
  CHECK_THROWS_AS(a->apply(0, both, row), algo::RejectedMessage);
  CHECK(a->x().cwiseEqual(x0).all());
  const std::vector<algo::Incoming> retry{{1, 0, mb.view()}};
  a->apply(0, retry, row);
  const Vec y0 = x0.cast<float>().cast<Real>(), y1 = gossipStart(1, kDim).cast<float>().cast<Real>();
  const Vec want = 0.75 * y0 + 0.25 * y1 - kLr * 0.1 * (y0 - y1);  // 2's weight goes to node 0's own model
  CHECK((a->x() - want).norm() <= gossip::precision::tol(1e-12, 1e-6) * want.norm());
}

TEST_CASE("lsgd converges on a convex problem - near the minimiser of the average objective") {
  // sum_i 0.5 ||x - target_i||^2 is minimised by the mean target. D-PSGD's average model reaches it exactly
  // (W keeps the average); the pull moves the average toward the leaders' targets, so lsgd stops near it,
  // not at it. Checked: the run settles (a fixed point), and the average model's error is a small fraction
  // of where the nodes started.
  auto c = compress::makeCompressor({.name = "fp32"});
  Vec mean = Vec::Zero(kDim);
  for (PeerId i = 0; i < 6; ++i) mean += targetOf(i);
  mean /= 6.0;
  const auto averageError = [&](MiniNet& net) {
    Vec avg = Vec::Zero(kDim);
    for (auto& [id, n] : net.nodes()) avg += n->algorithm().x();
    return (avg / 6.0 - mean).norm() / mean.norm();
  };
  for (const double lambda : {0.0, 0.2}) {
    CAPTURE(lambda);
    algo::AlgorithmParams params{.name = "lsgd", .leader_pull = lambda};
    MiniNet net(6, nodes(params, *c));
    const double start = net.maxRelError(mean.cast<double>());
    for (Round t = 0; t < 600; ++t) net.round(t);
    std::map<PeerId, Vec> before;
    for (auto& [id, n] : net.nodes()) before[id] = n->algorithm().x();
    net.round(600);
    double moved = 0;
    for (auto& [id, n] : net.nodes()) moved = std::max<double>(moved, (n->algorithm().x() - before[id]).norm() / mean.norm());
    const double err = averageError(net);
    CAPTURE(start);
    CAPTURE(err);
    CAPTURE(moved);
    CHECK(moved < 1e-6);
    CHECK(err < (lambda == 0 ? 1e-6 : 0.1 * start));  // (fp32 messages round the D-PSGD average)
  }
}

// ---- the global leader (leader_global_pull > 0)

namespace {

constexpr std::uint64_t kEpoch = 5;

algo::AlgorithmParams globalParams() {
  return {.name = "lsgd", .leader_pull = 0.0, .leader_global_pull = 0.5, .leader_global_period = kEpoch};
}

PeerId ringDistance(PeerId a, PeerId b, PeerId n) {
  const PeerId d = a > b ? a - b : b - a;
  return std::min(d, n - d);
}

// The lowest loss, ties to the lowest id.
PeerId winnerOf(const std::map<PeerId, double>& loss) {
  PeerId w = loss.begin()->first;
  for (const auto& [id, l] : loss)
    if (l < loss.at(w)) w = id;
  return w;
}

}  // namespace

TEST_CASE("lsgd global leader: all nodes elect the epoch's lowest loss and take its model once - hop by hop") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto params = globalParams();
  MiniNet net(8, nodes(params, *c));  // a ring of 8: diameter 4 < the epoch of 5 rounds
  std::map<PeerId, double> startLoss;
  for (Round t = 0; t < kEpoch; ++t) {
    net.round(t);
    if (t == 0)
      for (auto& [id, n] : net.nodes()) startLoss[id] = lsgd(n).reportedLoss();  // the candidates of epoch 0
  }
  const PeerId w = winnerOf(startLoss);
  for (auto& [id, n] : net.nodes()) {
    CHECK(lsgd(n).candidate() == w);
    CHECK_FALSE(lsgd(n).globalLeader().has_value());  // nothing was elected before epoch 0
  }
  // Epoch 1: the winner's model of round 5 reaches node i in round 5 + distance - 1 and pulls it halfway
  // after the D-PSGD mix (leader_pull = 0: the mix is plain D-PSGD).
  const Vec copy = net.nodes().at(w)->algorithm().x().cast<float>().cast<Real>();
  for (Round t = kEpoch; t < 2 * kEpoch; ++t) {
    std::map<PeerId, Vec> x, y;
    for (auto& [id, n] : net.nodes()) {
      x[id] = n->algorithm().x();
      y[id] = sentValue(*c, x[id]);
    }
    net.round(t);
    for (auto& [id, n] : net.nodes()) {
      CAPTURE(t);
      CAPTURE(id);
      CHECK(lsgd(n).globalLeader() == std::optional<PeerId>(w));
      const auto& row = net.row(id);
      Vec want = row.self * y.at(id) - kLr * (x.at(id) - targetOf(id));
      for (const auto& [j, wj] : row.neighbors) want += wj * y.at(j);
      const bool arrives = id != w && t == kEpoch + ringDistance(id, w, 8) - 1;
      if (arrives) want -= 0.5 * (want - copy);
      CHECK((n->algorithm().x() - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
    }
  }
  for (auto& [id, n] : net.nodes()) CHECK(lsgd(n).copiesTaken() == (id == w ? 0u : 1u));
  // Epoch 2 elects again (from the losses of round 5) and every other node takes one more copy.
  for (Round t = 2 * kEpoch; t < 3 * kEpoch; ++t) net.round(t);
  std::uint64_t taken = 0;
  for (auto& [id, n] : net.nodes()) taken += lsgd(n).copiesTaken();
  CHECK(taken == 2 * 7);
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("lsgd global leader: a winner that crashes before its copy goes out costs that epoch's pull only") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto params = globalParams();
  MiniNet net(8, nodes(params, *c));
  std::map<PeerId, double> startLoss;
  for (Round t = 0; t < kEpoch; ++t) {
    net.round(t);
    if (t == 0)
      for (auto& [id, n] : net.nodes()) startLoss[id] = lsgd(n).reportedLoss();
  }
  const PeerId w = winnerOf(startLoss);
  net.crash(w);
  for (Round t = kEpoch; t < 3 * kEpoch; ++t) {
    net.round(t);
    if (t == 2 * kEpoch - 1)
      for (auto& [id, n] : net.nodes()) CHECK(lsgd(n).copiesTaken() == 0);  // epoch 1: no copy anywhere
  }
  // Epoch 2 has a new leader among the survivors, and its copy reached every other node.
  std::uint64_t taken = 0;
  for (auto& [id, n] : net.nodes()) {
    CHECK(lsgd(n).globalLeader().has_value());
    CHECK(lsgd(n).globalLeader() != std::optional<PeerId>(w));
    taken += lsgd(n).copiesTaken();
  }
  CHECK(taken == 6);
  CHECK(net.rejectedTotal() == 0);
}

TEST_CASE("lsgd global leader: trailer sizes - bad trailers refused with the model unchanged - pull 0 adds nothing") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const Vec x0 = gossipStart(0, kDim);
  compress::Encoded plain, with;
  algo::makeAlgorithm({.name = "lsgd"}, *c, 0, x0)->prepare(0, zeroGradient(), kLr, plain);
  auto a = algo::makeAlgorithm(globalParams(), *c, 0, x0);
  a->prepare(0, zeroGradient(), kLr, with);
  CHECK(with.size() == plain.size() + algo::Lsgd::kGlobalBytes);
  auto b = algo::makeAlgorithm(globalParams(), *c, 1, gossipStart(1, kDim));
  compress::Encoded mb;
  b->prepare(0, zeroGradient(), kLr, mb);
  const topology::MixingRow row{.self = 0.5, .neighbors = {{1, 0.5}}};
  const std::size_t flagAt = mb.size() - algo::Lsgd::kHeaderBytes - algo::Lsgd::kGlobalBytes;
  Bytes badFlag(mb.bytes.begin(), mb.bytes.end());
  badFlag[flagAt] = std::byte{2};
  Bytes claimsCopy(mb.bytes.begin(), mb.bytes.end());
  claimsCopy[flagAt] = std::byte{1};  // a copy flag without the copy's bytes before it
  Bytes nanLoss(mb.bytes.begin(), mb.bytes.end());
  const double nan = std::nan("");
  std::memcpy(nanLoss.data() + flagAt + 5, &nan, sizeof nan);
  for (const Bytes* bad : {&badFlag, &claimsCopy, &nanLoss}) {
    const algo::Incoming m{1, 0, *bad};
    CHECK_THROWS_AS(a->apply(0, std::span<const algo::Incoming>(&m, 1), row), algo::RejectedMessage);
    CHECK(a->x().cwiseEqual(x0).all());
  }
  const algo::Incoming good{1, 0, mb.view()};
  a->apply(0, std::span<const algo::Incoming>(&good, 1), row);
}

TEST_CASE("lsgd global leader: a checkpoint taken while a copy waits to be relayed continues byte for byte") {
  auto c = compress::makeCompressor({.name = "fp32"});
  const auto params = globalParams();
  MiniNet net(8, nodes(params, *c));
  for (Round t = 0; t <= kEpoch; ++t) net.round(t);  // round 5: the winner's neighbours took the copy
  for (auto& [id, n] : net.nodes()) {
    if (lsgd(n).lastCopyRound() != kEpoch || lsgd(n).copiesTaken() != 1) continue;
    Bytes saved;
    ByteWriter w(saved);
    n->algorithm().save(w);
    auto restored = algo::makeAlgorithm(params, *c, static_cast<PeerId>(id), Vec::Zero(kDim));
    ByteReader r(saved);
    restored->load(r);
    compress::Encoded want, got;
    n->algorithm().prepare(kEpoch + 1, zeroGradient(), kLr, want);  // carries the relayed copy
    restored->prepare(kEpoch + 1, zeroGradient(), kLr, got);
    CHECK(want.size() > 4 * static_cast<std::size_t>(kDim));
    CHECK(got.bytes == want.bytes);
    Bytes cut(saved.begin(), saved.end() - 20);
    ByteReader rc(cut);
    auto fresh = algo::makeAlgorithm(params, *c, static_cast<PeerId>(id), Vec::Zero(kDim));
    CHECK_THROWS_AS(fresh->load(rc), DecodeError);
    return;
  }
  FAIL("no node took the copy in round 5");
}

TEST_CASE("lsgd refuses a global pull outside [0 - 1] or an epoch of 0 rounds") {
  auto c = compress::makeCompressor({.name = "fp32"});
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "lsgd", .leader_global_pull = 1.5}, *c, 0, Vec::Zero(kDim)), ConfigError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "lsgd", .leader_global_pull = 0.5, .leader_global_period = 0}, *c, 0,
                                      Vec::Zero(kDim)),
                  ConfigError);
}

// ---- lsgd on DeepSqueeze (algorithm.leader_base = "deepsqueeze")

TEST_CASE("lsgd on deepsqueeze with leader_pull = 0 is DeepSqueeze bit for bit") {
  algo::AlgorithmParams lp{.name = "lsgd", .eta = 0.3, .leader_pull = 0.0, .leader_base = "deepsqueeze"};
  algo::AlgorithmParams dp{.name = "deepsqueeze", .eta = 0.3};
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.25});
  MiniNet a(5, nodes(lp, *c)), b(5, nodes(dp, *c));
  for (Round t = 0; t < 30; ++t) {
    a.round(t);
    b.round(t);
  }
  for (auto& [id, n] : a.nodes()) CHECK(n->algorithm().x().cwiseEqual(b.nodes().at(id)->algorithm().x()).all());
}

TEST_CASE("lsgd on deepsqueeze: a round is x_half + eta sum_j w_ij (c_j - c_i) - lr lambda (c_i - c_leader)") {
  // The first round, where the error memory is still zero: c_i is x_half in fp32.
  const double eta = 0.5, lambda = 0.7;
  algo::AlgorithmParams params{.name = "lsgd", .eta = eta, .leader_pull = lambda, .leader_base = "deepsqueeze"};
  auto c = compress::makeCompressor({.name = "fp32"});
  MiniNet net(6, nodes(params, *c));
  std::map<PeerId, Vec> half, sent;
  std::map<PeerId, double> loss;
  for (auto& [id, n] : net.nodes()) {
    const Vec& x = n->algorithm().x();
    half[id] = x - kLr * (x - targetOf(id));
    sent[id] = sentValue(*c, half[id]);
    loss[id] = 0.5 * (x - targetOf(id)).squaredNorm();
  }
  net.round(0);
  int pulled = 0;
  for (auto& [id, n] : net.nodes()) {
    CAPTURE(id);
    const auto& row = net.row(id);
    PeerId leader = id;
    for (const auto& [j, w] : row.neighbors)
      if (loss.at(j) < loss.at(leader) || (loss.at(j) == loss.at(leader) && j < leader)) leader = j;
    Vec want = half.at(id);
    for (const auto& [j, w] : row.neighbors) want += eta * w * (sent.at(j) - sent.at(id));
    if (leader != id) {
      want -= kLr * lambda * (sent.at(id) - sent.at(leader));
      ++pulled;
    }
    CHECK(dynamic_cast<const algo::LsgdDeepSqueeze&>(n->algorithm()).lastLeader() == leader);
    CHECK((n->algorithm().x() - want).norm() <= gossip::precision::tol(1e-12, 1e-5) * want.norm());
  }
  CHECK(pulled > 0);
}

TEST_CASE("lsgd on deepsqueeze: checkpoint with the error memory - and another base's state is refused") {
  algo::AlgorithmParams params{.name = "lsgd", .eta = 0.3, .leader_base = "deepsqueeze"};
  auto c = compress::makeCompressor({.name = "topk", .ratio = 0.25});
  MiniNet net(4, nodes(params, *c));
  for (Round t = 0; t < 6; ++t) net.round(t);
  const algo::Algorithm& a = net.nodes().at(2)->algorithm();
  Bytes saved;
  ByteWriter w(saved);
  a.save(w);
  auto b = algo::makeAlgorithm(params, *c, 2, Vec::Zero(kDim));
  ByteReader r(saved);
  b->load(r);
  compress::Encoded want, got;
  const_cast<algo::Algorithm&>(a).prepare(6, onesGradient(), kLr, want);  // uses the restored error memory
  b->prepare(6, onesGradient(), kLr, got);
  CHECK(got.bytes == want.bytes);
  auto plain = algo::makeAlgorithm({.name = "lsgd"}, *c, 2, Vec::Zero(kDim));
  ByteReader r2(saved);
  CHECK_THROWS_AS(plain->load(r2), DecodeError);
  CHECK_THROWS_AS(algo::makeAlgorithm({.name = "lsgd", .leader_base = "choco"}, *c, 0, Vec::Zero(kDim)), ConfigError);
}
