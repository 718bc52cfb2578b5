#include "compressors/qsgd.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compressors/codec_base.h"
#include "compressors/field_pack.h"
#include "compressors/quant_common.h"
#include "compressors/simd.h"
#include "compressors/uniforms.h"

namespace gossip::compress {
namespace {

constexpr unsigned kMaxLevels = 65535;  // the level count travels in the u16 header param

class Qsgd final : public detail::CodecBase<Qsgd> {
 public:
  explicit Qsgd(const CompressorSpec& spec)
      : levels_(spec.levels), block_(spec.block), unbiased_(spec.unbiased), width_(1 + bitsFor(spec.levels)) {
    if (levels_ < 1 || levels_ > kMaxLevels)
      throw ConfigError("compressor.levels must be in 1.." + std::to_string(kMaxLevels) + " for qsgd, got " +
                        std::to_string(levels_));
    name_ = "qsgd(levels=" + std::to_string(levels_) + ",block=" + std::to_string(block_) +
            ",unbiased=" + (unbiased_ ? "true" : "false") + ")";
  }

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return CodecId::Qsgd; }
  bool unbiased() const override { return unbiased_; }
  Quality quality(std::uint32_t dim) const override {
    const double w = omega(detail::Blocks::of(dim, block_).longest());
    if (unbiased_) return {Quality::Kind::Variance, w};
    return {Quality::Kind::Contraction, 1.0 / (1.0 + w)};
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
      detail::putScale(scales, b, static_cast<float>(std::sqrt(detail::sumSquares(x.data() + lo, blocks.end(b) - lo))));
    }
    const T cap = static_cast<T>(levels_);
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
        const T inv = cap / static_cast<T>(norm);
        const T* xs = x.data() + lo;
        const std::uint32_t* us = u + (lo - first);
        const auto s = static_cast<std::int32_t>(levels_);
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const std::int32_t level = detail::roundLevel(std::fabs(xs[i]) * inv, us[i], s);
          cs[i] = static_cast<std::uint32_t>(level) << 1 | static_cast<std::uint32_t>(xs[i] < T(0));
        }
      });
    };
    detail::produceFields(scales + 4ull * blocks.count, dim, width_, encodeChunk);
    if (!unbiased_) {
      // Scaled form: the levels above were drawn against N; only the reconstruction shrinks.
      for (std::uint32_t b = 0; b < blocks.count; ++b) {
        const double w = omega(static_cast<std::uint32_t>(blocks.end(b) - blocks.begin(b)));
        detail::putScale(scales, b, static_cast<float>(detail::getScale(scales, b) / (1.0 + w)));
      }
    }
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "qsgd payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    detail::expectParam(h, param(), "qsgd");
    const auto blocks = detail::Blocks::of(h.dim, block_);
    const auto scales = detail::readScales(r, blocks.count, "qsgd");
    const auto fields = r.take(packedBytes(h.dim, width_));
    r.expectEnd();
    detail::expectCleanPadding(fields, h.dim, width_, "qsgd");
    if ((1u << (width_ - 1)) - 1 > levels_) {  // level codes can exceed s: check them all first
      std::uint32_t top = 0;
      detail::visitFields(fields.data(), h.dim, width_, [&](std::size_t, const std::uint32_t* codes, unsigned count) {
        for (unsigned i = 0; i < count; ++i) top = std::max(top, codes[i] >> 1);
      });
      if (top > levels_) throw DecodeError("qsgd payload: level " + std::to_string(top) + " above s");
    }
    const auto addChunk = [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
      detail::forEachBlockPiece(blocks, first, first + count, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
        const T m = static_cast<T>(scale * static_cast<double>(detail::getScale(scales.data(), b)) / levels_);
        const std::uint32_t* cs = codes + (lo - first);
        T* a = acc.data() + lo;
        for (std::size_t i = 0; i < hi - lo; ++i) {
          const auto level = static_cast<std::int32_t>(cs[i] >> 1);
          const std::int32_t neg = -static_cast<std::int32_t>(cs[i] & 1u);  // 0 or -1: branch-free negate
          a[i] += m * static_cast<T>((level ^ neg) - neg);
        }
      });
    };
    detail::visitFields(fields.data(), h.dim, width_, addChunk);
  }

 private:
  std::uint16_t param() const { return static_cast<std::uint16_t>(levels_); }
  double omega(std::uint32_t len) const {
    const double s = levels_;
    return std::min(len / (s * s), std::sqrt(static_cast<double>(len)) / s);
  }

  unsigned levels_;
  std::uint32_t block_;
  bool unbiased_;
  unsigned width_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Compressor> makeQsgd(const CompressorSpec& spec) { return std::make_unique<Qsgd>(spec); }

}  // namespace gossip::compress
