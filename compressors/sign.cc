#include "compressors/sign.h"

#include <string>

#include "compressors/codec_base.h"
#include "compressors/field_pack.h"
#include "compressors/quant_common.h"
#include "compressors/simd.h"

namespace gossip::compress {
namespace {

class Sign final : public detail::CodecBase<Sign> {
 public:
  explicit Sign(const CompressorSpec& spec)
      : block_(spec.block), name_("sign(block=" + std::to_string(spec.block) + ")") {}

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return CodecId::Sign; }
  bool unbiased() const override { return false; }
  Quality quality(std::uint32_t dim) const override {
    const std::uint32_t longest = detail::Blocks::of(dim, block_).longest();
    return {Quality::Kind::Contraction, longest == 0 ? 1.0 : 1.0 / longest};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    return kCodecHeaderBytes + 4ull * detail::Blocks::of(dim, block_).count + packedBytes(dim, 1);
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    const auto blocks = detail::Blocks::of(dim, block_);
    std::byte* scales = detail::beginPayload(out, codec(), 0, dim, encodedBytes(dim));
    for (std::uint32_t b = 0; b < blocks.count; ++b) {
      const std::size_t lo = blocks.begin(b);
      const std::size_t n = blocks.end(b) - lo;
      detail::putScale(scales, b, static_cast<float>(detail::sumAbs(x.data() + lo, n) / static_cast<double>(n)));
    }
    detail::produceFields(scales + 4ull * blocks.count, dim, 1,
                          [&](std::size_t first, std::uint32_t* codes, unsigned count) {
                            const T* xs = x.data() + first;
                            for (unsigned i = 0; i < count; ++i) codes[i] = xs[i] < T(0) ? 1u : 0u;
                          });
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "sign payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    detail::expectParam(h, 0, "sign");
    const auto blocks = detail::Blocks::of(h.dim, block_);
    const auto scales = detail::readScales(r, blocks.count, "sign");
    const auto fields = r.take(packedBytes(h.dim, 1));
    r.expectEnd();
    detail::expectCleanPadding(fields, h.dim, 1, "sign");
    // Every bit pattern is a valid sign, so nothing else can be wrong: from here on acc is written.
    detail::visitFields(fields.data(), h.dim, 1, [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
      detail::forEachBlockPiece(blocks, first, first + count, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
        const T m = static_cast<T>(scale * static_cast<double>(detail::getScale(scales.data(), b)));
        const std::uint32_t* c = codes + (lo - first);
        T* a = acc.data() + lo;
        for (std::size_t i = 0; i < hi - lo; ++i)  // 1 - 2c is +1 or -1; arithmetic keeps the loop vectorizable
          a[i] += m * static_cast<T>(1 - 2 * static_cast<std::int32_t>(c[i]));
      });
    });
  }

 private:
  std::uint32_t block_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Compressor> makeSign(const CompressorSpec& spec) { return std::make_unique<Sign>(spec); }

}  // namespace gossip::compress
