#include "compressors/lead_quant.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "compressors/codec_base.h"
#include "compressors/field_pack.h"
#include "compressors/quant_common.h"
#include "compressors/simd.h"
#include "compressors/uniforms.h"

namespace gossip::compress {
namespace {

struct Grouping {
  unsigned group;  // digits per field
  unsigned width;  // bits per field
};

// The g <= 32-bit grouping with the fewest bits per digit (ties: the smaller g).
constexpr Grouping bestGrouping(std::uint64_t base) {
  Grouping best{0, 0};
  std::uint64_t p = 1;
  for (unsigned g = 1;; ++g) {
    p *= base;
    if (p > (std::uint64_t{1} << 32)) break;
    const unsigned w = bitsFor(p - 1);
    if (best.group == 0 || w * best.group < best.width * g) best = {g, w};
  }
  return best;
}

// Everything that depends on b, as constants, so the digit loops divide by a constant base.
template <unsigned B>
struct Format {
  static constexpr std::uint32_t kLevels = 1u << (B - 1);  // s
  static constexpr std::uint32_t kBase = 2 * kLevels + 1;
  static constexpr unsigned kGroup = bestGrouping(kBase).group;
  static constexpr unsigned kWidth = bestGrouping(kBase).width;
  static constexpr std::size_t kChunkElems = std::size_t{detail::kChunk} * kGroup;
  static constexpr std::uint64_t power(unsigned j) {
    std::uint64_t p = 1;
    while (j-- > 0) p *= kBase;
    return p;
  }
  static std::size_t fields(std::size_t dim) { return (dim + kGroup - 1) / kGroup; }
};

template <unsigned B, class T>
GOSSIP_VECTOR_CLONES void encodeDigits(std::span<const T> x, const detail::Blocks& blocks, const std::byte* scales,
                                       std::byte* dst, Rng& rng) {
  using F = Format<B>;
  const auto s = static_cast<std::int32_t>(F::kLevels);
  const auto cap = static_cast<T>(F::kLevels);
  detail::UniformStream uniforms(rng);
  std::uint32_t u[F::kChunkElems];
  std::uint32_t digits[F::kChunkElems];
  const auto encodeChunk = [&](std::size_t first, std::uint32_t* codes, unsigned count) {
    const std::size_t e0 = first * F::kGroup;
    const std::size_t e1 = std::min(x.size(), (first + count) * F::kGroup);
    uniforms.fill(u, e1 - e0);
    detail::forEachBlockPiece(blocks, e0, e1, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
      std::uint32_t* ds = digits + (lo - e0);
      const float norm = detail::getScale(scales, b);
      if (!detail::usableNorm(norm)) {  // zero block, or inf/NaN inside (the payload is rejected anyway)
        std::fill(ds, ds + (hi - lo), F::kLevels);
        return;
      }
      const T inv = cap / static_cast<T>(norm);
      const T* xs = x.data() + lo;
      const std::uint32_t* us = u + (lo - e0);
      for (std::size_t i = 0; i < hi - lo; ++i) {
        const std::int32_t level = detail::roundLevel(std::fabs(xs[i]) * inv, us[i], s);
        const std::int32_t neg = -static_cast<std::int32_t>(xs[i] < T(0));  // 0 or -1: branch-free sign
        ds[i] = static_cast<std::uint32_t>(s + ((level ^ neg) - neg));
      }
    });
    std::fill(digits + (e1 - e0), digits + std::size_t{count} * F::kGroup, 0u);
    for (unsigned f = 0; f < count; ++f) {
      std::uint32_t c = 0;
      for (unsigned j = F::kGroup; j-- > 0;) c = c * F::kBase + digits[f * F::kGroup + j];
      codes[f] = c;
    }
  };
  detail::produceFields(dst, F::fields(x.size()), F::kWidth, encodeChunk);
}

// Throws DecodeError unless every field holds g valid digits and the digits past dim are 0.
template <unsigned B>
GOSSIP_VECTOR_CLONES void checkDigits(std::span<const std::byte> fields, std::size_t dim) {
  using F = Format<B>;
  const std::size_t n = F::fields(dim);
  if (n == 0) return;
  std::uint32_t bad = 0;
  std::uint32_t last = 0;
  detail::visitFields(fields.data(), n, F::kWidth, [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
    for (unsigned i = 0; i < count; ++i) bad |= static_cast<std::uint32_t>(codes[i] >= F::power(F::kGroup));
    if (first + count == n) last = codes[count - 1];
  });
  const auto tailDigits = static_cast<unsigned>(dim - (n - 1) * F::kGroup);
  if (bad || last >= F::power(tailDigits)) throw DecodeError("lead payload: invalid level digits");
}

template <unsigned B, class T>
GOSSIP_VECTOR_CLONES void addDigits(std::span<const std::byte> fields, const detail::Blocks& blocks,
                                    const std::byte* scales, std::span<T> acc, double scale) {
  using F = Format<B>;
  std::uint32_t digits[F::kChunkElems];
  const auto addChunk = [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
    for (unsigned f = 0; f < count; ++f) {
      std::uint32_t c = codes[f];
      for (unsigned j = 0; j < F::kGroup; ++j) {
        digits[f * F::kGroup + j] = c % F::kBase;
        c /= F::kBase;
      }
    }
    const std::size_t e0 = first * F::kGroup;
    const std::size_t e1 = std::min(acc.size(), (first + count) * F::kGroup);
    detail::forEachBlockPiece(blocks, e0, e1, [&](std::uint32_t b, std::size_t lo, std::size_t hi) {
      const T m = static_cast<T>(scale * static_cast<double>(detail::getScale(scales, b)) / F::kLevels);
      const std::uint32_t* ds = digits + (lo - e0);
      T* a = acc.data() + lo;
      for (std::size_t i = 0; i < hi - lo; ++i)
        a[i] += m * static_cast<T>(static_cast<std::int32_t>(ds[i]) - static_cast<std::int32_t>(F::kLevels));
    });
  };
  detail::visitFields(fields.data(), F::fields(acc.size()), F::kWidth, addChunk);
}

// Calls fn(std::integral_constant<unsigned, b>{}) for b in 1..8.
template <class Fn>
decltype(auto) withBits(unsigned b, Fn&& fn) {
  switch (b) {
    case 1: return fn(std::integral_constant<unsigned, 1>{});
    case 2: return fn(std::integral_constant<unsigned, 2>{});
    case 3: return fn(std::integral_constant<unsigned, 3>{});
    case 4: return fn(std::integral_constant<unsigned, 4>{});
    case 5: return fn(std::integral_constant<unsigned, 5>{});
    case 6: return fn(std::integral_constant<unsigned, 6>{});
    case 7: return fn(std::integral_constant<unsigned, 7>{});
    default: return fn(std::integral_constant<unsigned, 8>{});  // bits is validated to 1..8
  }
}

class LeadQuant final : public detail::CodecBase<LeadQuant> {
 public:
  explicit LeadQuant(const CompressorSpec& spec) : bits_(spec.bits), block_(spec.block) {
    if (bits_ < 1 || bits_ > 8)
      throw ConfigError("compressor.bits must be in 1..8 for lead, got " + std::to_string(bits_));
    name_ = "lead(bits=" + std::to_string(bits_) + ",block=" + std::to_string(block_) + ")";
  }

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return CodecId::LeadQuant; }
  bool unbiased() const override { return true; }
  Quality quality(std::uint32_t dim) const override {
    const double d = detail::Blocks::of(dim, block_).longest();
    const double s = std::ldexp(1.0, static_cast<int>(bits_) - 1);
    return {Quality::Kind::Variance, std::min(d / (4.0 * s * s), std::sqrt(d) / s)};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    const std::size_t fieldBytes = withBits(bits_, [&](auto b) {
      using F = Format<decltype(b)::value>;
      return packedBytes(F::fields(dim), F::kWidth);
    });
    return kCodecHeaderBytes + 4ull * detail::Blocks::of(dim, block_).count + fieldBytes;
  }

  template <class T>
  void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    const auto blocks = detail::Blocks::of(dim, block_);
    std::byte* scales = detail::beginPayload(out, codec(), param(), dim, encodedBytes(dim));
    for (std::uint32_t b = 0; b < blocks.count; ++b) {
      const std::size_t lo = blocks.begin(b);
      detail::putScale(scales, b, static_cast<float>(detail::maxAbs(x.data() + lo, blocks.end(b) - lo)));
    }
    withBits(bits_, [&](auto b) {
      encodeDigits<decltype(b)::value>(x, blocks, scales, scales + 4ull * blocks.count, rng);
    });
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "lead payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    detail::expectParam(h, param(), "lead");
    const auto blocks = detail::Blocks::of(h.dim, block_);
    const auto scales = detail::readScales(r, blocks.count, "lead");
    const std::size_t fieldBytes = encodedBytes(h.dim) - kCodecHeaderBytes - scales.size();
    const auto fields = r.take(fieldBytes);
    r.expectEnd();
    withBits(bits_, [&](auto b) {
      using F = Format<decltype(b)::value>;
      detail::expectCleanPadding(fields, F::fields(h.dim), F::kWidth, "lead");
      checkDigits<decltype(b)::value>(fields, h.dim);
      addDigits<decltype(b)::value>(fields, blocks, scales.data(), acc, scale);
    });
  }

 private:
  std::uint16_t param() const { return static_cast<std::uint16_t>(bits_); }

  unsigned bits_;
  std::uint32_t block_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Compressor> makeLeadQuant(const CompressorSpec& spec) { return std::make_unique<LeadQuant>(spec); }

}  // namespace gossip::compress
