#include "compressors/cast.h"

#include <cstring>

#include "compressors/codec_base.h"

namespace gossip::compress {
namespace {

// fp32 on the wire: header + dim little-endian floats. Lossless for float input; rounds double input.
class Fp32 final : public detail::CodecBase<Fp32> {
 public:
  std::string_view name() const override { return "fp32"; }
  CodecId codec() const override { return CodecId::Fp32; }
  bool unbiased() const override { return true; }
  Quality quality(std::uint32_t) const override { return {Quality::Kind::Variance, 0.0}; }
  std::size_t encodedBytes(std::uint32_t dim) const override { return kCodecHeaderBytes + 4ull * dim; }

  template <class T>
  void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    detail::writeHeader(out, codec(), 0, dim, encodedBytes(dim));
    out.bytes.resize(encodedBytes(dim));
    std::byte* dst = out.bytes.data() + kCodecHeaderBytes;
    if constexpr (std::is_same_v<T, float>) {
      if (dim) std::memcpy(dst, x.data(), 4ull * dim);
    } else {
      for (std::uint32_t i = 0; i < dim; ++i) {
        const float f = static_cast<float>(x[i]);
        std::memcpy(dst + 4ull * i, &f, 4);
      }
    }
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "fp32 payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    auto body = r.take(4ull * h.dim);
    r.expectEnd();
    const std::byte* src = body.data();
    bool finite = true;
    for (std::uint32_t i = 0; i < h.dim; ++i) {
      float f;
      std::memcpy(&f, src + 4ull * i, 4);
      finite &= std::isfinite(f);
    }
    if (!finite) throw DecodeError("non-finite value in fp32 payload");
    const T s = static_cast<T>(scale);
    for (std::uint32_t i = 0; i < h.dim; ++i) {
      float f;
      std::memcpy(&f, src + 4ull * i, 4);
      acc[i] += s * static_cast<T>(f);
    }
  }
};

}  // namespace

std::unique_ptr<Compressor> makeFp32(const CompressorSpec&) { return std::make_unique<Fp32>(); }

std::unique_ptr<Compressor> makeFp16(const CompressorSpec&) {
  throw ConfigError("compressor fp16 is not implemented yet");
}
std::unique_ptr<Compressor> makeBf16(const CompressorSpec&) {
  throw ConfigError("compressor bf16 is not implemented yet");
}

}  // namespace gossip::compress
