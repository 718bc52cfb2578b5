// DeepSqueeze's mix in place (algorithms/stateless.cc, mixInPlace): with a sparse codec the messages are
// added to x itself, and the disagreement is measured on the union of the supports. The oracle is the same
// class on the dense path, forced by a codec that forwards every call to the sparse one but hides its
// support: the models must be bit for bit equal, the disagreements equal to rounding, a bad message refused
// with x unchanged on both.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "algorithms/algorithm.h"
#include "compressors/compressor.h"
#include "core/rng.h"

using namespace gossip;
using gossip::algo::Vec;

namespace {

// The codec `inner`, with no support: DeepSqueeze takes its dense path (next x built aside).
class HiddenSupport final : public compress::Compressor {
 public:
  explicit HiddenSupport(const compress::Compressor& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  compress::CodecId codec() const override { return inner_.codec(); }
  bool unbiased() const override { return inner_.unbiased(); }
  compress::Quality quality(std::uint32_t dim) const override { return inner_.quality(dim); }
  std::size_t encodedBytes(std::uint32_t dim) const override { return inner_.encodedBytes(dim); }
  void encode(std::span<const float> x, Rng& rng, compress::Encoded& out) const override { inner_.encode(x, rng, out); }
  void encode(std::span<const double> x, Rng& rng, compress::Encoded& out) const override { inner_.encode(x, rng, out); }
  void decodeAdd(std::span<const std::byte> p, std::span<float> acc, double s) const override { inner_.decodeAdd(p, acc, s); }
  void decodeAdd(std::span<const std::byte> p, std::span<double> acc, double s) const override { inner_.decodeAdd(p, acc, s); }

 private:
  const compress::Compressor& inner_;
};

Vec randomVec(Rng& rng, Eigen::Index d, double scale) {
  Vec v(d);
  for (Eigen::Index i = 0; i < d; ++i) v[i] = static_cast<Real>(scale * (rng.uniform() * 2.0 - 1.0));
  return v;
}

void encodeVec(const compress::Compressor& c, const Vec& v, Rng& rng, compress::Encoded& out) {
  c.encode(std::span<const Real>(v.data(), static_cast<std::size_t>(v.size())), rng, out);
}

}  // namespace

TEST_CASE("deepsqueeze: the in-place mix of a sparse codec equals the dense path bit for bit") {
  constexpr Eigen::Index d = 997;  // not a multiple of 64: the bitmap's last word is partial
  for (const compress::CompressorSpec& spec :
       {compress::CompressorSpec{.name = "topk", .ratio = 0.05}, compress::CompressorSpec{.name = "randk", .ratio = 0.1},
        compress::CompressorSpec{.name = "topk_natural", .ratio = 0.05}}) {
    CAPTURE(spec.name);
    const auto sparse = compress::makeCompressor(spec);
    const HiddenSupport dense(*sparse);
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
