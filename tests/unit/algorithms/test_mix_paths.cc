// The stateless methods' fast mixes (algorithms/stateless.cc), each against the general path it replaces:
//  - DeepSqueeze with a sparse codec adds the messages to x in place and measures the disagreement on the
//    union of the supports. Oracle: the same class on the dense path, forced by a codec that forwards every
//    call to the sparse one but hides its support (Disguised).
//  - D-PSGD with fp32 and float32 state mixes in one blocked pass (compressors/cast.h, fp32Mix). Oracle:
//    the scaled copy and one decodeAdd per message, computed here.
//  - The primal-dual family (LEAD, Prox-LEAD, NIDS) with fp32 and float32 state applies its round in one
//    blocked pass (algorithms/primal_dual_fp32.h). Oracle: the same class on the general path, forced by a
//    codec that forwards every call to fp32 but does not say it is fp32 (Disguised under another id).
// Models bit for bit equal, disagreements equal to rounding, a bad message refused with x unchanged. The fp32
// paths also read a message in parts (the transport's receive buffers, algorithm.h Incoming::parts): the
// same state bit for bit as from one buffer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/primal_dual.h"
#include "compressors/compressor.h"
#include "core/rng.h"

using namespace gossip;
using gossip::algo::Vec;

namespace {

// The codec `inner`, every call forwarded but its support hidden (sparseSupport is not forwarded, so
// DeepSqueeze takes its dense path) and, with `id`, under another codec id (the primal-dual family cannot tell
// it is fp32 and takes its general path).
class Disguised final : public compress::Compressor {
 public:
  explicit Disguised(const compress::Compressor& inner, std::optional<compress::CodecId> id = std::nullopt)
      : inner_(inner), id_(id) {}
  std::string_view name() const override { return inner_.name(); }
  compress::CodecId codec() const override { return id_.value_or(inner_.codec()); }
  bool unbiased() const override { return inner_.unbiased(); }
  compress::Quality quality(std::uint32_t dim) const override { return inner_.quality(dim); }
  std::size_t encodedBytes(std::uint32_t dim) const override { return inner_.encodedBytes(dim); }
  void encode(std::span<const float> x, Rng& rng, compress::Encoded& out) const override { inner_.encode(x, rng, out); }
  void encode(std::span<const double> x, Rng& rng, compress::Encoded& out) const override { inner_.encode(x, rng, out); }
  void decodeAdd(std::span<const std::byte> p, std::span<float> acc, double s) const override { inner_.decodeAdd(p, acc, s); }
  void decodeAdd(std::span<const std::byte> p, std::span<double> acc, double s) const override { inner_.decodeAdd(p, acc, s); }

 private:
  const compress::Compressor& inner_;
  std::optional<compress::CodecId> id_;
};

Vec randomVec(Rng& rng, Eigen::Index d, double scale) {
  Vec v(d);
  for (Eigen::Index i = 0; i < d; ++i) v[i] = static_cast<Real>(scale * (rng.uniform() * 2.0 - 1.0));
  return v;
}

void encodeVec(const compress::Compressor& c, const Vec& v, Rng& rng, compress::Encoded& out) {
  c.encode(std::span<const Real>(v.data(), static_cast<std::size_t>(v.size())), rng, out);
}

// A payload cut into parts as a transport hands a large one over (algorithm.h, Incoming::parts): a first
// part of `first` bytes, then parts of `size` bytes, the last one shorter.
std::vector<std::span<const std::byte>> cutInParts(const Bytes& b, std::size_t first, std::size_t size) {
  std::vector<std::span<const std::byte>> parts;
  const std::span<const std::byte> all(b);
  std::size_t at = std::min(first, b.size());
  parts.push_back(all.first(at));
  while (at < b.size()) {
    const std::size_t n = std::min(size, b.size() - at);
    parts.push_back(all.subspan(at, n));
    at += n;
  }
  return parts;
}

// The same message given in parts: no payload, only the parts (as the engine hands it to a method whose
// readsPayloadParts() is true).
algo::Incoming inParts(PeerId from, Incarnation inc, std::span<const std::span<const std::byte>> parts) {
  return {from, inc, {}, parts};
}

}  // namespace

TEST_CASE("deepsqueeze: the in-place mix of a sparse codec equals the dense path bit for bit") {
  constexpr Eigen::Index d = 997;  // not a multiple of 64: the bitmap's last word is partial
  for (const compress::CompressorSpec& spec :
       {compress::CompressorSpec{.name = "topk", .ratio = 0.05}, compress::CompressorSpec{.name = "randk", .ratio = 0.1},
        compress::CompressorSpec{.name = "topk_natural", .ratio = 0.05}}) {
    CAPTURE(spec.name);
    const auto sparse = compress::makeCompressor(spec);
    const Disguised dense(*sparse);
    std::vector<std::uint32_t> probe;
    compress::Encoded e;
    Rng rng(7);
    encodeVec(*sparse, randomVec(rng, d, 1.0), rng, e);
    REQUIRE(sparse->sparseSupport(e.view(), d, probe));  // the codec under test is sparse...
    REQUIRE_FALSE(dense.sparseSupport(e.view(), d, probe));  // ...and the oracle is not

    const algo::AlgorithmParams p{.name = "deepsqueeze", .eta = 0.7, .l1 = 0.01, .seed = 3};
    const Vec x0 = randomVec(rng, d, 1.0);
    auto inPlace = algo::makeAlgorithm(p, *sparse, 0, x0);
    auto aside = algo::makeAlgorithm(p, dense, 0, x0);
    // Neighbours 1..3; neighbour 3 stays silent (its weight goes to the node's own sketch).
    const topology::MixingRow row{.self = 0.4, .neighbors = {{1, 0.25}, {2, 0.2}, {3, 0.15}}};
    for (Round t = 0; t < 12; ++t) {
      CAPTURE(t);
      const Vec g = randomVec(rng, d, 0.5);
      compress::Encoded outA, outB;
      inPlace->prepare(t, g, 0.1, outA);
      aside->prepare(t, g, 0.1, outB);
      REQUIRE(outA.bytes == outB.bytes);
      // Neighbours' messages; in odd rounds neighbour 2 repeats this node's own support, so indices repeat.
      std::vector<compress::Encoded> theirs(2);
      encodeVec(*sparse, randomVec(rng, d, 2.0), rng, theirs[0]);
      if (t % 2) theirs[1] = outA;
      else encodeVec(*sparse, randomVec(rng, d, 2.0), rng, theirs[1]);
      const std::vector<algo::Incoming> msgs{{1, 0, theirs[0].view()}, {2, 0, theirs[1].view()}};

      if (t == 5) {  // a truncated message: refused by both, x unchanged, then the round without it
        compress::Encoded bad = theirs[1];
        bad.bytes.resize(bad.bytes.size() - 3);
        const std::vector<algo::Incoming> badMsgs{{1, 0, theirs[0].view()}, {2, 0, bad.view()}};
        const Vec before = inPlace->x();
        CHECK_THROWS_AS(inPlace->apply(t, badMsgs, row), algo::RejectedMessage);
        CHECK_THROWS_AS(aside->apply(t, badMsgs, row), algo::RejectedMessage);
        CHECK((inPlace->x().array() == before.array()).all());
        CHECK((aside->x().array() == before.array()).all());
      }
      inPlace->apply(t, msgs, row);
      aside->apply(t, msgs, row);
      REQUIRE((inPlace->x().array() == aside->x().array()).all());
      const double want = aside->disagreement();
      REQUIRE(want > 1e-3);  // the neighbours' sketches differ: not 0 against 0
      CHECK(inPlace->disagreement() == doctest::Approx(want).epsilon(1e-12));
    }
    // The states (x and the error memory) are the same bytes.
    Bytes a, b;
    ByteWriter wa(a), wb(b);
    inPlace->save(wa);
    aside->save(wb);
    CHECK(a == b);
  }
}

#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
TEST_CASE("dpsgd fp32: the one-pass mix equals a scaled copy plus a decodeAdd per message bit for bit") {
  constexpr Eigen::Index d = 3 * 4096 + 1001;  // several blocks and a partial one
  const auto c = compress::makeCompressor({.name = "fp32"});
  Rng rng(11);
  const algo::AlgorithmParams p{.name = "dpsgd", .seed = 5};
  auto node = algo::makeAlgorithm(p, *c, 0, randomVec(rng, d, 1.0));
  const topology::MixingRow row{.self = 0.35, .neighbors = {{1, 0.3}, {4, 0.2}, {9, 0.15}}};
  for (Round t = 0; t < 6; ++t) {
    CAPTURE(t);
    const Vec g = t % 2 ? randomVec(rng, d, 0.5) : Vec();  // empty: a zero gradient (model mode)
    compress::Encoded own;
    node->prepare(t, g, 0.05, own);
    std::vector<compress::Encoded> theirs(3);
    for (auto& e : theirs) encodeVec(*c, randomVec(rng, d, 3.0), rng, e);
    // Neighbour 9 is missing in even rounds: its weight goes to the node's own model.
    std::vector<algo::Incoming> msgs{{1, 0, theirs[0].view()}, {4, 0, theirs[1].view()}};
    if (t % 2) msgs.push_back({9, 0, theirs[2].view()});
    const Vec x = node->x();
    Vec want = static_cast<Real>(row.self + (t % 2 ? 0.0 : 0.15)) * x;
    c->decodeAdd(theirs[0].view(), std::span<Real>(want.data(), d), 0.3);
    c->decodeAdd(theirs[1].view(), std::span<Real>(want.data(), d), 0.2);
    if (t % 2) c->decodeAdd(theirs[2].view(), std::span<Real>(want.data(), d), 0.15);
    const double disagreement = (want - x).cast<double>().norm();
    if (g.size()) want -= static_cast<Real>(0.05) * g;

    if (t == 3) {  // a NaN in the last block of neighbour 4, then a short payload from 1: refused, x unchanged
      compress::Encoded nan = theirs[1];
      const float bad = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(nan.bytes.data() + nan.bytes.size() - 8, &bad, 4);
      std::vector<algo::Incoming> badMsgs = msgs;
      badMsgs[1].payload = nan.view();
      try {
        node->apply(t, badMsgs, row);
        FAIL("a NaN was mixed");
      } catch (const algo::RejectedMessage& e) {
        CHECK(e.from == 4);
      }
      CHECK((node->x().array() == x.array()).all());
      compress::Encoded shortOne = theirs[0];
      shortOne.bytes.pop_back();
      badMsgs = msgs;
      badMsgs[0].payload = shortOne.view();
      try {
        node->apply(t, badMsgs, row);
        FAIL("a short payload was mixed");
      } catch (const algo::RejectedMessage& e) {
        CHECK(e.from == 1);
      }
      CHECK((node->x().array() == x.array()).all());
    }
    node->apply(t, msgs, row);
    REQUIRE((node->x().array() == want.array()).all());
    REQUIRE(disagreement > 1.0);
    CHECK(node->disagreement() == doctest::Approx(disagreement).epsilon(1e-12));
  }
}

TEST_CASE("dpsgd fp32: messages read in parts mix bit for bit as the same messages in one buffer") {
  constexpr Eigen::Index d = 5 * 4096 + 77;
  const auto c = compress::makeCompressor({.name = "fp32"});
  Rng rng(23);
  const algo::AlgorithmParams p{.name = "dpsgd", .seed = 5};
  const Vec x0 = randomVec(rng, d, 1.0);
  auto whole = algo::makeAlgorithm(p, *c, 0, x0);
  auto inPieces = algo::makeAlgorithm(p, *c, 0, x0);
  CHECK(inPieces->readsPayloadParts());
  const topology::MixingRow row{.self = 0.4, .neighbors = {{1, 0.25}, {2, 0.2}, {3, 0.15}}};
  for (Round t = 0; t < 4; ++t) {
    CAPTURE(t);
    const Vec g = randomVec(rng, d, 0.5);
    compress::Encoded ownA, ownB;
    whole->prepare(t, g, 0.05, ownA);
    inPieces->prepare(t, g, 0.05, ownB);
    std::vector<compress::Encoded> theirs(3);
    for (auto& e : theirs) encodeVec(*c, randomVec(rng, d, 3.0), rng, e);
    // Boundaries that cut blocks anywhere (not at multiples of 4,096 values), an empty part, and one message
    // in one buffer: each body's runs end at other values than the others'.
    const auto p1 = cutInParts(theirs[0].bytes, 8 + 4 * 1000, 4 * 4500);
    auto p2 = cutInParts(theirs[1].bytes, 12, 4 * 777);
    p2.insert(p2.begin() + 3, std::span<const std::byte>());
    const std::vector<algo::Incoming> msgs{{1, 0, theirs[0].view()}, {2, 0, theirs[1].view()}, {3, 0, theirs[2].view()}};
    const std::vector<algo::Incoming> pieces{inParts(1, 0, p1), inParts(2, 0, p2), {3, 0, theirs[2].view()}};
    if (t == 1) {  // a NaN in a later part of 2, then a part boundary inside a value from 1: refused, x unchanged
      const Vec x = inPieces->x();
      compress::Encoded nan = theirs[1];
      const float bad = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(nan.bytes.data() + nan.bytes.size() - 4 * 900, &bad, 4);
      const auto pn = cutInParts(nan.bytes, 12, 4 * 777);
      std::vector<algo::Incoming> badMsgs{pieces[0], inParts(2, 0, pn), pieces[2]};
      try {
        inPieces->apply(t, badMsgs, row);
        FAIL("a NaN was mixed");
      } catch (const algo::RejectedMessage& e) {
        CHECK(e.from == 2);
      }
      const auto split = cutInParts(theirs[0].bytes, 8 + 4 * 1000 + 2, 4 * 4500);
      badMsgs = {inParts(1, 0, split), pieces[1], pieces[2]};
      try {
        inPieces->apply(t, badMsgs, row);
        FAIL("a value split between parts was mixed");
      } catch (const algo::RejectedMessage& e) {
        CHECK(e.from == 1);
        CHECK(std::string(e.what()).find("splits a value") != std::string::npos);
      }
      CHECK((inPieces->x().array() == x.array()).all());
    }
    whole->apply(t, msgs, row);
    inPieces->apply(t, pieces, row);
    REQUIRE((inPieces->x().array() == whole->x().array()).all());
    CHECK(inPieces->disagreement() == doctest::Approx(whole->disagreement()).epsilon(1e-12));
  }
}

TEST_CASE("dpsgd fp32: the one-pass mix takes any number of neighbours (a complete graph of 301)") {
  constexpr Eigen::Index d = 37;
  const auto c = compress::makeCompressor({.name = "fp32"});
  Rng rng(3);
  auto node = algo::makeAlgorithm({.name = "dpsgd"}, *c, 0, randomVec(rng, d, 1.0));
  topology::MixingRow row{.self = 1.0 / 301, .neighbors = {}};
  std::vector<compress::Encoded> theirs(300);
  std::vector<algo::Incoming> msgs;
  for (PeerId j = 1; j <= 300; ++j) {
    row.neighbors.push_back({j, 1.0 / 301});
    encodeVec(*c, randomVec(rng, d, 2.0), rng, theirs[j - 1]);
  }
  for (PeerId j = 1; j <= 300; ++j) msgs.push_back({j, 0, theirs[j - 1].view()});
  compress::Encoded own;
  const Vec zero;  // a zero gradient (model mode); prepare keeps a reference to it until apply
  node->prepare(0, zero, 0.1, own);
  const Vec x = node->x();
  Vec want = static_cast<Real>(row.self) * x;
  for (const auto& e : theirs) c->decodeAdd(e.view(), std::span<Real>(want.data(), d), 1.0 / 301);
  // A NaN from the last neighbour is refused by name, x unchanged.
  compress::Encoded nan = theirs[299];
  const float bad = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.bytes.data() + 8, &bad, 4);
  std::vector<algo::Incoming> badMsgs = msgs;
  badMsgs[299].payload = nan.view();
  try {
    node->apply(0, badMsgs, row);
    FAIL("a NaN was mixed");
  } catch (const algo::RejectedMessage& e) {
    CHECK(e.from == 300);
  }
  CHECK((node->x().array() == x.array()).all());
  node->apply(0, msgs, row);
  CHECK((node->x().array() == want.array()).all());
}
#endif

#if !(defined(GOSSIP_STATE_FLOAT64) && GOSSIP_STATE_FLOAT64)
TEST_CASE("lead - prox_lead - nids with fp32: the one-pass round equals the general path bit for bit") {
  constexpr Eigen::Index d = 2 * 4096 + 555;  // several blocks and a partial one
  const auto fp32 = compress::makeCompressor({.name = "fp32"});
  const Disguised general(*fp32, compress::CodecId::Fp16);
  struct Case {
    const char* name;
    double alpha, gamma, l1;
  };
  for (const Case& k : {Case{"lead", 0.5, 1.0, 0.0}, Case{"prox_lead", 0.3, 0.8, 0.02}, Case{"nids", 1.0, 1.0, 0.0}}) {
    CAPTURE(k.name);
    Rng rng(17);
    const algo::AlgorithmParams p{.name = k.name, .gamma = k.gamma, .alpha = k.alpha, .l1 = k.l1, .seed = 9};
    const Vec x0 = randomVec(rng, d, 1.0);
    algo::PrimalDual fused(k.name, p, *fp32, 0, x0);
    algo::PrimalDual aside(k.name, p, general, 0, x0);
    algo::PrimalDual pieces(k.name, p, *fp32, 0, x0);  // given its messages in parts
    CHECK(pieces.readsPayloadParts());
    CHECK_FALSE(aside.readsPayloadParts());
    // Neighbours 2 and 5 (incarnation 1 and 3), whose references start at random public states.
    const topology::MixingRow row{.self = 0.4, .neighbors = {{2, 0.35}, {5, 0.25}}};
    const std::vector<algo::EdgeKey> keys{{2, 1}, {5, 3}};
    for (const auto& key : keys) {
      const Vec pub = randomVec(rng, d, 1.0);
      fused.addEdge(key, {pub.data(), static_cast<std::size_t>(d)});
      aside.addEdge(key, {pub.data(), static_cast<std::size_t>(d)});
      pieces.addEdge(key, {pub.data(), static_cast<std::size_t>(d)});
    }
    const Vec g0 = randomVec(rng, d, 0.5);
    fused.startStep(g0, 0.05);
    aside.startStep(g0, 0.05);
    pieces.startStep(g0, 0.05);
    for (Round t = 0; t < 8; ++t) {
      CAPTURE(t);
      const Vec g = randomVec(rng, d, 0.5);
      compress::Encoded outA, outB, outC;
      fused.prepare(t, g, 0.05, outA);
      aside.prepare(t, g, 0.05, outB);
      pieces.prepare(t, g, 0.05, outC);
      REQUIRE(outA.bytes == outB.bytes);
      std::vector<compress::Encoded> theirs(2);
      for (auto& e : theirs) encodeVec(*fp32, randomVec(rng, d, 0.3), rng, e);
      const std::vector<algo::Incoming> msgs{{2, 1, theirs[0].view()}, {5, 3, theirs[1].view()}};
      if (t == 4) {  // a NaN in the last block from 5, then a message of 2's former life: refused, state unchanged
        Bytes before;
        ByteWriter wb(before);
        fused.save(wb);
        compress::Encoded nan = theirs[1];
        const float bad = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(nan.bytes.data() + nan.bytes.size() - 4, &bad, 4);
        const std::vector<algo::Incoming> nanMsgs{{2, 1, theirs[0].view()}, {5, 3, nan.view()}};
        try {
          fused.apply(t, nanMsgs, row);
          FAIL("a NaN was mixed");
        } catch (const algo::RejectedMessage& e) {
          CHECK(e.from == 5);
        }
        const std::vector<algo::Incoming> stale{{2, 0, theirs[0].view()}, {5, 3, theirs[1].view()}};
        CHECK_THROWS_AS(fused.apply(t, stale, row), algo::RejectedMessage);
        Bytes after;
        ByteWriter wa(after);
        fused.save(wa);
        CHECK(after == before);
      }
      fused.apply(t, msgs, row);
      aside.apply(t, msgs, row);
      // 2's message in parts that cut blocks anywhere, 5's in one buffer.
      const auto p2 = cutInParts(theirs[0].bytes, 8 + 4 * 3001, 4 * 2048);
      const std::vector<algo::Incoming> partMsgs{inParts(2, 1, p2), {5, 3, theirs[1].view()}};
      pieces.apply(t, partMsgs, row);
      REQUIRE((fused.x().array() == aside.x().array()).all());
      REQUIRE((pieces.x().array() == aside.x().array()).all());
      const double want = aside.disagreement();
      REQUIRE(want > 1e-3);
      CHECK(fused.disagreement() == doctest::Approx(want).epsilon(1e-12));
    }
    // x, d, h and every edge's h_j and e_ij: the same bytes.
    Bytes a, b, c;
    ByteWriter wa(a), wb(b), wc(c);
    fused.save(wa);
    aside.save(wb);
    pieces.save(wc);
    CHECK(a == b);
    CHECK(c == b);
    if (k.l1 > 0) CHECK((fused.x().array() == 0).count() > 0);  // the soft threshold did set coordinates to 0
  }
}
#endif
