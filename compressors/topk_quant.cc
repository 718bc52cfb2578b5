#include "compressors/topk_quant.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compressors/codec_base.h"
#include "compressors/field_pack.h"
#include "compressors/natural.h"
#include "compressors/natural_kernels.h"
#include "compressors/quant_common.h"
#include "compressors/uniforms.h"
#include "compressors/select.h"
#include "compressors/sparse_common.h"

namespace gossip::compress {
namespace {

// Per-thread buffer for the kept values (codec methods are const and may run concurrently).
std::vector<float>& valueScratch() {
  thread_local std::vector<float> v;
  return v;
}

// The value coder applied to the k kept entries.
struct NaturalPart {
  static constexpr CodecId kCodec = CodecId::TopKQuant;
  static constexpr const char* kName = "topk_natural";
  unsigned width() const { return detail::kNatBits; }
  std::uint16_t param() const { return 0; }
  double delta(std::uint32_t k, std::uint32_t dim) const { return 0.875 * k / dim; }
  std::size_t normBytes() const { return 0; }
  void writeNorm(std::span<const float>, std::byte*) const {}
  float readNorm(ByteReader&) const { return 1.0f; }
  void codes(const float* v, const std::uint32_t* u, std::uint32_t* c, unsigned n, float) const {
    for (unsigned i = 0; i < n; ++i) c[i] = detail::natCode(v[i], u[i]);
  }
  bool valid(std::uint32_t code) const { return detail::natCodeValid(code); }
  float value(std::uint32_t code) const { return detail::natValue(code); }
};

struct DitherPart {
  static constexpr CodecId kCodec = CodecId::TopKQuant;
  static constexpr const char* kName = "topk_dither";
  unsigned levels;
  bool infNorm;
  detail::DitherLevels kernel{levels};

  unsigned width() const { return 1 + bitsFor(levels); }
  std::uint16_t param() const { return static_cast<std::uint16_t>(levels | (infNorm ? 0x100u : 0u)); }
  double delta(std::uint32_t k, std::uint32_t dim) const {
    const double w = ditherOmega(k, levels);
    return w < 1.0 ? (1.0 - w) * k / dim : k / (dim * (1.0 + w));
  }
  std::size_t normBytes() const { return 4; }
  // The true norm goes first; codes() reads it back, then the scaled form (omega_k >= 1) shrinks it.
  void writeNorm(std::span<const float> v, std::byte* dst) const {
    const double norm =
        infNorm ? detail::maxAbs(v.data(), v.size()) : std::sqrt(detail::sumSquares(v.data(), v.size()));
    detail::putScale(dst, 0, static_cast<float>(norm));
  }
  void shrinkNorm(std::uint32_t k, std::byte* dst) const {
    const double w = ditherOmega(k, levels);
    if (w >= 1.0) detail::putScale(dst, 0, static_cast<float>(detail::getScale(dst, 0) / (1.0 + w)));
  }
  float readNorm(ByteReader& r) const { return detail::getScale(detail::readScales(r, 1, kName).data(), 0); }
  void codes(const float* v, const std::uint32_t* u, std::uint32_t* c, unsigned n, float norm) const {
    if (!detail::usableNorm(norm)) {  // all kept values 0, or non-finite (the payload is rejected anyway)
      std::fill(c, c + n, 0u);
      return;
    }
    const float inv = 1.0f / norm;
    const detail::DitherLevels k = kernel;
    for (unsigned i = 0; i < n; ++i)
      c[i] = k.index(std::fabs(v[i]) * inv, u[i]) << 1 | static_cast<std::uint32_t>(v[i] < 0.0f);
  }
  bool valid(std::uint32_t code) const { return (code >> 1) <= levels; }
  float value(std::uint32_t code) const { return kernel.signedValue(code >> 1, code & 1u); }
};

template <class Part>
class TopKQuant final : public detail::CodecBase<TopKQuant<Part>> {
 public:
  TopKQuant(const CompressorSpec& spec, Part part, std::string extra)
      : count_(spec, Part::kName), part_(std::move(part)), name_(count_.name()) {
    name_.insert(name_.size() - 1, extra);
  }

  std::string_view name() const override { return name_; }
  CodecId codec() const override { return Part::kCodec; }
  bool unbiased() const override { return false; }
  Quality quality(std::uint32_t dim) const override {
    return {Quality::Kind::Contraction, dim == 0 ? 1.0 : part_.delta(count_.k(dim), dim)};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override {
    const std::uint32_t k = count_.k(dim);
    return kCodecHeaderBytes + 4 + indexBytes(dim, k) + part_.normBytes() + packedBytes(k, part_.width());
  }

  template <class T>
  void encodeT(std::span<const T> x, Rng& rng, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    const std::uint32_t k = count_.k(dim);
    auto& idx = detail::indexScratch();
    selectTopK(x, k, idx);
    auto& vals = valueScratch();
    vals.resize(k);
    for (std::uint32_t j = 0; j < k; ++j) vals[j] = static_cast<float>(x[idx[j]]);

    detail::writeHeader(out, codec(), part_.param(), dim, encodedBytes(dim));
    ByteWriter w(out.bytes);
    w.put(k);
    writeIndices(idx, dim, w);
    std::byte* norm = w.reserveTail(part_.normBytes());
    part_.writeNorm(vals, norm);
    const float n = part_.normBytes() ? detail::getScale(norm, 0) : 1.0f;
    std::byte* fields = w.reserveTail(packedBytes(k, part_.width()));
    detail::UniformStream uniforms(rng);
    std::uint32_t u[detail::kChunk];
    detail::produceFields(fields, k, part_.width(), [&](std::size_t first, std::uint32_t* codes, unsigned count) {
      uniforms.fill(u, count);
      part_.codes(vals.data() + first, u, codes, count, n);
    });
    if constexpr (requires { part_.shrinkNorm(k, norm); }) part_.shrinkNorm(k, norm);
  }

  template <class T>
  void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    auto& idx = detail::indexScratch();
    float norm = 0;
    const auto fields = parse(p, acc.size(), idx, norm);
    const T m = static_cast<T>(scale * static_cast<double>(norm));
    const auto addChunk = [&](std::size_t first, const std::uint32_t* codes, unsigned count) {
      const std::uint32_t* at = idx.data() + first;
      for (unsigned i = 0; i < count; ++i) acc[at[i]] += m * static_cast<T>(part_.value(codes[i]));
    };
    detail::visitFields(fields.data(), static_cast<std::uint32_t>(idx.size()), part_.width(), addChunk);
  }

  bool sparse() const override { return true; }
  bool sparseSupport(std::span<const std::byte> p, std::uint32_t dim, std::vector<std::uint32_t>& out) const override {
    auto& idx = detail::indexScratch();
    float norm = 0;
    parse(p, dim, idx, norm);
    out.insert(out.end(), idx.begin(), idx.end());
    return true;
  }

 private:
  // Validates a payload for a vector of `dim`: its indices into idx, its norm, its packed value codes returned.
  std::span<const std::byte> parse(std::span<const std::byte> p, std::size_t dim, std::vector<std::uint32_t>& idx,
                                   float& norm) const {
    ByteReader r(p, Part::kName);
    const auto h = detail::readHeader(r, codec(), dim);
    detail::expectParam(h, part_.param(), Part::kName);
    const auto k = r.get<std::uint32_t>();
    if (k != count_.k(h.dim))
      throw DecodeError(std::string(Part::kName) + " payload: k " + std::to_string(k) + " differs from configured " +
                        std::to_string(count_.k(h.dim)));
    readIndices(r, h.dim, k, idx);
    norm = part_.readNorm(r);
    const auto fields = r.take(packedBytes(k, part_.width()));
    r.expectEnd();
    detail::expectCleanPadding(fields, k, part_.width(), Part::kName);
    std::uint32_t bad = 0;
    detail::visitFields(fields.data(), k, part_.width(), [&](std::size_t, const std::uint32_t* codes, unsigned count) {
      for (unsigned i = 0; i < count; ++i) bad |= static_cast<std::uint32_t>(!part_.valid(codes[i]));
    });
    if (bad) throw DecodeError(std::string(Part::kName) + " payload: invalid value code");
    return fields;
  }

  detail::SparseCount count_;
  Part part_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Compressor> makeTopKNatural(const CompressorSpec& spec) {
  return std::make_unique<TopKQuant<NaturalPart>>(spec, NaturalPart{}, "");
}

std::unique_ptr<Compressor> makeTopKDither(const CompressorSpec& spec) {
  if (spec.levels < 1 || spec.levels > kMaxDitherLevels)
    throw ConfigError("compressor.levels must be in 1.." + std::to_string(kMaxDitherLevels) +
                      " for topk_dither, got " + std::to_string(spec.levels));
  const std::string extra = ",levels=" + std::to_string(spec.levels) + ",p=" + (spec.inf_norm ? "inf" : "2");
  return std::make_unique<TopKQuant<DitherPart>>(spec, DitherPart{spec.levels, spec.inf_norm}, extra);
}

}  // namespace gossip::compress
