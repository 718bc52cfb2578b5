#include "compressors/natural.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compressors/codec_base.h"
#include "compressors/field_pack.h"
#include "compressors/natural_kernels.h"
#include "compressors/quant_common.h"
#include "compressors/simd.h"
#include "compressors/uniforms.h"

namespace gossip::compress {
namespace {

class Natural final : public detail::CodecBase<Natural> {
 public:
  std::string_view name() const override { return "natural"; }
  CodecId codec() const override { return CodecId::Natural; }
  bool unbiased() const override { return true; }
  Quality quality(std::uint32_t) const override { return {Quality::Kind::Variance, 0.125}; }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    return kCodecHeaderBytes + packedBytes(dim, detail::kNatBits);
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    std::byte* body = detail::beginPayload(out, codec(), 0, dim, encodedBytes(dim));
    detail::UniformStream uniforms(rng);
    std::uint32_t u[detail::kChunk];
    detail::produceFields(body, dim, detail::kNatBits, [&](std::size_t first, std::uint32_t* codes, unsigned count) {
      uniforms.fill(u, count);
      const T* xs = x.data() + first;
      for (unsigned i = 0; i < count; ++i) codes[i] = detail::natCode(static_cast<float>(xs[i]), u[i]);
    });
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "natural payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    detail::expectParam(h, 0, "natural");
    const auto fields = r.take(packedBytes(h.dim, detail::kNatBits));
    r.expectEnd();
    detail::expectCleanPadding(fields, h.dim, detail::kNatBits, "natural");
    std::uint32_t invalid = 0;
    const auto checkChunk = [&](std::size_t, const std::uint32_t* codes, unsigned count) {
      for (unsigned i = 0; i < count; ++i) invalid |= static_cast<std::uint32_t>(!detail::natCodeValid(codes[i]));
    };
    detail::visitFields(fields.data(), h.dim, detail::kNatBits, checkChunk);
    if (invalid) throw DecodeError("natural payload: non-finite value code");
    const T s = static_cast<T>(scale);
    const auto addChunk = [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
      T* a = acc.data() + first;
      for (unsigned i = 0; i < count; ++i) a[i] += s * static_cast<T>(detail::natValue(codes[i]));
    };
    detail::visitFields(fields.data(), h.dim, detail::kNatBits, addChunk);
  }
};

class Dither final : public detail::CodecBase<Dither> {
 public:
  explicit Dither(const CompressorSpec& spec)
      : levels_(spec.levels), block_(spec.block), infNorm_(spec.inf_norm), width_(1 + bitsFor(spec.levels)),
        kernel_(std::clamp(spec.levels, 1u, kMaxDitherLevels)) {
    if (levels_ < 1 || levels_ > kMaxDitherLevels)
      throw ConfigError("compressor.levels must be in 1.." + std::to_string(kMaxDitherLevels) +
                        " for dither, got " + std::to_string(levels_));
    name_ = "dither(levels=" + std::to_string(levels_) + ",p=" + (infNorm_ ? "inf" : "2") +
            ",block=" + std::to_string(block_) + ")";
  }

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return CodecId::NatDither; }
  bool unbiased() const override { return true; }
  Quality quality(std::uint32_t dim) const override {
    return {Quality::Kind::Variance, ditherOmega(detail::Blocks::of(dim, block_).longest(), levels_)};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    return kCodecHeaderBytes + 4ull * detail::Blocks::of(dim, block_).count + packedBytes(dim, width_);
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    const auto blocks = detail::Blocks::of(dim, block_);
    std::byte* scales = detail::beginPayload(out, codec(), param(), dim, encodedBytes(dim));
    for (std::uint32_t b = 0; b < blocks.count; ++b) {
      const std::size_t lo = blocks.begin(b);
      const std::size_t n = blocks.end(b) - lo;
      const double norm = infNorm_ ? detail::maxAbs(x.data() + lo, n) : std::sqrt(detail::sumSquares(x.data() + lo, n));
      detail::putScale(scales, b, static_cast<float>(norm));
    }
    detail::UniformStream uniforms(rng);
    std::uint32_t u[detail::kChunk];
    const auto encodeChunk = [&](std::size_t first, std::uint32_t* codes, unsigned count) {
      uniforms.fill(u, count);
      detail::forEachBlockPiece(blocks, first, first + count, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
        std::uint32_t* cs = codes + (lo - first);
        const float norm = detail::getScale(scales, b);
        if (!detail::usableNorm(norm)) {  // zero block, or inf/NaN inside (the payload is rejected anyway)
          std::fill(cs, cs + (hi - lo), 0u);
          return;
        }
        const T inv = T(1) / static_cast<T>(norm);
        const T* xs = x.data() + lo;
        const std::uint32_t* us = u + (lo - first);
        const detail::DitherLevels levels = kernel_;  // a local copy cannot alias cs
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const auto y = static_cast<float>(std::fabs(xs[i]) * inv);
          cs[i] = levels.index(y, us[i]) << 1 | static_cast<std::uint32_t>(xs[i] < T(0));
        }
      });
    };
    detail::produceFields(scales + 4ull * blocks.count, dim, width_, encodeChunk);
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "dither payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    detail::expectParam(h, param(), "dither");
    const auto blocks = detail::Blocks::of(h.dim, block_);
    const auto scales = detail::readScales(r, blocks.count, "dither");
    const auto fields = r.take(packedBytes(h.dim, width_));
    r.expectEnd();
    detail::expectCleanPadding(fields, h.dim, width_, "dither");
    std::uint32_t top = 0;
    detail::visitFields(fields.data(), h.dim, width_, [&](std::size_t, const std::uint32_t* codes, unsigned count) {
      for (unsigned i = 0; i < count; ++i) top = std::max(top, codes[i] >> 1);
    });
    if (top > levels_) throw DecodeError("dither payload: level index " + std::to_string(top) + " above s");
    const auto addChunk = [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
      detail::forEachBlockPiece(blocks, first, first + count, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
        const T m = static_cast<T>(scale * static_cast<double>(detail::getScale(scales.data(), b)));
        const std::uint32_t* cs = codes + (lo - first);
        T* a = acc.data() + lo;
        const detail::DitherLevels levels = kernel_;
        for (std::size_t i = 0; i < hi - lo; ++i)
          a[i] += m * static_cast<T>(levels.signedValue(cs[i] >> 1, cs[i] & 1u));
      });
    };
    detail::visitFields(fields.data(), h.dim, width_, addChunk);
  }

 private:
  std::uint16_t param() const { return static_cast<std::uint16_t>(levels_ | (infNorm_ ? 0x100u : 0u)); }

  unsigned levels_;
  std::uint32_t block_;
  bool infNorm_;
  unsigned width_;
  detail::DitherLevels kernel_;
  std::string name_;
};

}  // namespace

double ditherOmega(std::uint32_t d, unsigned levels) {
  const double t = std::sqrt(static_cast<double>(d)) * std::ldexp(1.0, 1 - static_cast<int>(levels));
  return 0.125 + t * std::min(1.0, t);
}

std::unique_ptr<Compressor> makeNatural(const CompressorSpec&) { return std::make_unique<Natural>(); }
std::unique_ptr<Compressor> makeDither(const CompressorSpec& spec) { return std::make_unique<Dither>(spec); }

}  // namespace gossip::compress
