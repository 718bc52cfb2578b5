#include "compressors/randk.h"

#include <bit>
#include <string>
#include <vector>

#include "compressors/codec_base.h"
#include "compressors/sparse_common.h"

namespace gossip::compress {

void randomSupport(std::uint64_t seed, std::uint32_t dim, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  GOSSIP_CHECK(k <= dim, "randomSupport needs k <= dim");
  idx.clear();
  if (k == 0) return;
  // Membership bitmap (dim bits), reused per thread. Reading the set back word by word yields the
  // indices already sorted, so no sort is needed and the work is O(k + dim/64).
  thread_local std::vector<std::uint64_t> bits;
  bits.assign((std::size_t{dim} + 63) / 64, 0);
  auto testAndSet = [&](std::uint64_t i) {
    const std::uint64_t m = 1ull << (i % 64);
    const bool was = (bits[i / 64] & m) != 0;
    bits[i / 64] |= m;
    return was;
  };
  Rng g(seed);
  for (std::uint64_t j = dim - k; j < dim; ++j) {  // Floyd: each step adds exactly one new element
    const std::uint64_t t = g.below(j + 1);
    if (testAndSet(t)) testAndSet(j);
  }
  idx.reserve(k);
  for (std::size_t w = 0; w < bits.size(); ++w) {
    std::uint64_t word = bits[w];
    while (word != 0) {
      idx.push_back(static_cast<std::uint32_t>(64 * w + static_cast<unsigned>(std::countr_zero(word))));
      word &= word - 1;
    }
  }
  GOSSIP_CHECK(idx.size() == k, "Floyd sampling produced a wrong count");
}

namespace {

// Payload: header (param = 1 if unbiased else 0, dim), u64 seed, k little-endian f32 values x[i] in
// ascending index order, where the indices are randomSupport(seed, dim, k). Values are sent unscaled;
// the unbiased form multiplies by dim/k when decoding, on the sender and the receivers alike.
class RandK final : public detail::CodecBase<RandK> {
 public:
  explicit RandK(const CompressorSpec& spec) : count_(spec, spec.unbiased ? "randk_unbiased" : "randk"),
                                               unbiased_(spec.unbiased) {}

  std::string_view name() const override { return count_.name(); }
  CodecId codec() const override { return CodecId::RandK; }
  bool unbiased() const override { return unbiased_; }
  Quality quality(std::uint32_t dim) const override {
    if (dim == 0) return unbiased_ ? Quality{Quality::Kind::Variance, 0.0} : Quality{Quality::Kind::Contraction, 1.0};
    const double ratio = double(count_.k(dim)) / double(dim);
    if (unbiased_) return {Quality::Kind::Variance, 1.0 / ratio - 1.0};
    return {Quality::Kind::Contraction, ratio};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override { return kCodecHeaderBytes + 8 + 4ull * count_.k(dim); }

  template <class T>
  void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    const std::uint32_t k = count_.k(dim);
    const std::uint64_t seed = rng.next();
    auto& idx = detail::indexScratch();
    randomSupport(seed, dim, k, idx);
    detail::writeHeader(out, codec(), param(), dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(seed);
    detail::writeValues(x, idx, w);
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    auto& idx = detail::indexScratch();
    std::uint32_t dim = 0;
    const auto values = parse(p, acc.size(), idx, dim);
    const std::uint32_t k = static_cast<std::uint32_t>(idx.size());
    const double s = unbiased_ && k > 0 ? scale * double(dim) / double(k) : scale;
    detail::scatterAdd(values, idx, s, acc);
  }

  bool sparse() const override { return true; }
  bool sparseSupport(std::span<const std::byte> p, std::uint32_t dim, std::vector<std::uint32_t>& out) const override {
    auto& idx = detail::indexScratch();
    std::uint32_t d = 0;
    parse(p, dim, idx, d);
    out.insert(out.end(), idx.begin(), idx.end());
    return true;
  }

 private:
  // Validates a payload for a vector of `accDim`: its support into idx, its dim, its value block returned.
  std::span<const std::byte> parse(std::span<const std::byte> p, std::size_t accDim, std::vector<std::uint32_t>& idx,
                                   std::uint32_t& dim) const {
    ByteReader r(p, "randk payload");
    const auto h = detail::readHeader(r, codec(), accDim);
    if (h.param != param())
      throw DecodeError("randk payload: header param " + std::to_string(h.param) + " (unbiased flag) differs from " +
                        std::to_string(param()));
    const auto seed = r.get<std::uint64_t>();
    const std::uint32_t k = count_.k(h.dim);
    const auto values = r.take(4ull * k);
    r.expectEnd();
    detail::checkFiniteValues(values, "randk");
    randomSupport(seed, h.dim, k, idx);
    dim = h.dim;
    return values;
  }

  std::uint16_t param() const { return unbiased_ ? 1 : 0; }
  detail::SparseCount count_;
  bool unbiased_;
};

}  // namespace

std::unique_ptr<Compressor> makeRandK(const CompressorSpec& spec) { return std::make_unique<RandK>(spec); }

}  // namespace gossip::compress
