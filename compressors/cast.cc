#include "compressors/cast.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "compressors/codec_base.h"
#include "core/crc32c.h"
#include "core/float_words.h"
#include "compressors/half.h"
#include "compressors/quant_common.h"
#include "compressors/simd.h"

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
  GOSSIP_VECTOR_CLONES void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    // Sized without clearing: every byte is written below, and a reused buffer of the right size (the
    // daemon's payload pool) then costs no zero-fill pass (writeHeader's clear + resize made one per round:
    // 3% of a 20M-parameter D-PSGD daemon's CPU).
    std::byte* dst = detail::beginPayload(out, codec(), 0, dim, encodedBytes(dim));
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
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, "fp32 payload");
    const auto h = detail::readHeader(r, codec(), acc.size());
    // fp32 has no parameter; accepting any value would let a corrupted header pass as valid.
    if (h.param != 0) throw DecodeError("fp32 payload: unexpected header param " + std::to_string(h.param));
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

struct Fp16Format {
  static constexpr CodecId kCodec = CodecId::Fp16;
  static constexpr const char* kName = "fp16";
  static constexpr double kUnitRoundoff = 0x1p-11;  // half an ulp, relative
  static std::uint16_t fromFloat(float f) { return detail::floatToHalf(f); }
  static float toFloat(std::uint16_t h) { return detail::halfToFloat(h); }
  static bool finite(std::uint16_t h) { return detail::halfIsFinite(h); }
};

struct Bf16Format {
  static constexpr CodecId kCodec = CodecId::Bf16;
  static constexpr const char* kName = "bf16";
  static constexpr double kUnitRoundoff = 0x1p-8;
  static std::uint16_t fromFloat(float f) { return detail::floatToBf16(f); }
  static float toFloat(std::uint16_t h) { return detail::bf16ToFloat(h); }
  static bool finite(std::uint16_t h) { return detail::bf16IsFinite(h); }
};

// 16-bit casts: header + dim little-endian 16-bit values (half.h has the rounding and range policy).
// Deterministic rounding, so biased; quality is the relative rounding error, which holds for values in
// the format's normal range (fp16: [2^-14, 65504]; smaller values lose relative precision, larger ones
// saturate).
template <class Fmt>
class Cast16 final : public detail::CodecBase<Cast16<Fmt>> {
 public:
  std::string_view name() const override { return Fmt::kName; }
  CodecId codec() const override { return Fmt::kCodec; }
  bool unbiased() const override { return false; }
  Quality quality(std::uint32_t) const override {
    return {Quality::Kind::Contraction, 1.0 - Fmt::kUnitRoundoff * Fmt::kUnitRoundoff};
  }
  std::size_t encodedBytes(std::uint32_t dim) const override { return kCodecHeaderBytes + 2ull * dim; }

  template <class T>
  GOSSIP_VECTOR_CLONES void encodeT(std::span<const T> x, Rng&, Encoded& out) const {
    const std::uint32_t dim = detail::checkedDim(x.size());
    std::byte* dst = detail::beginPayload(out, codec(), 0, dim, encodedBytes(dim));
    std::uint16_t buf[kStage];  // staged so the conversion loop is a plain vectorizable array loop
    for (std::size_t first = 0; first < dim; first += kStage) {
      const std::size_t n = std::min<std::size_t>(kStage, dim - first);
      const T* xs = x.data() + first;
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, float>)
          buf[i] = Fmt::fromFloat(xs[i]);
        else
          buf[i] = Fmt::fromFloat(detail::toFloatRoundOdd(xs[i]));
      }
      std::memcpy(dst + 2 * first, buf, 2 * n);
    }
  }

  template <class T>
  GOSSIP_VECTOR_CLONES void decodeAddT(std::span<const std::byte> p, std::span<T> acc, double scale) const {
    ByteReader r(p, Fmt::kName);
    const auto h = detail::readHeader(r, codec(), acc.size());
    if (h.param != 0) throw DecodeError(std::string(Fmt::kName) + " payload: unexpected header param");
    const std::byte* src = r.take(2ull * h.dim).data();
    r.expectEnd();
    std::uint16_t buf[kStage];
    std::uint32_t bad = 0;
    for (std::size_t first = 0; first < h.dim; first += kStage) {
      const std::size_t n = std::min<std::size_t>(kStage, h.dim - first);
      std::memcpy(buf, src + 2 * first, 2 * n);
      for (std::size_t i = 0; i < n; ++i) bad |= static_cast<std::uint32_t>(!Fmt::finite(buf[i]));
    }
    if (bad) throw DecodeError(std::string("non-finite value in ") + Fmt::kName + " payload");
    const T s = static_cast<T>(scale);
    for (std::size_t first = 0; first < h.dim; first += kStage) {
      const std::size_t n = std::min<std::size_t>(kStage, h.dim - first);
      std::memcpy(buf, src + 2 * first, 2 * n);
      T* a = acc.data() + first;
      for (std::size_t i = 0; i < n; ++i) a[i] += s * static_cast<T>(Fmt::toFloat(buf[i]));
    }
  }

 private:
  static constexpr std::size_t kStage = 256;
};

}  // namespace

std::unique_ptr<Compressor> makeFp32(const CompressorSpec&) { return std::make_unique<Fp32>(); }

std::span<std::byte> fp32PayloadBody(Encoded& out, std::size_t dim) {
  const std::uint32_t n = detail::checkedDim(dim);
  return {detail::beginPayload(out, CodecId::Fp32, 0, n, kCodecHeaderBytes + 4ull * n), 4ull * n};
}

bool fp32EncodeChecked(std::span<const float> x, Encoded& out) {
  const std::span<std::byte> body = fp32PayloadBody(out, x.size());
  // Each 8-byte word of the copy holds two values (core/float_words.h).
  std::uint64_t bad = 0;
  auto check = [&bad](std::uint64_t w) { bad |= nonFiniteFloatPair(w); };
  std::uint32_t crc = crc32c(std::span<const std::byte>(out.bytes.data(), kCodecHeaderBytes));
  crc = crc32cUpdateCopy(crc, std::as_bytes(x), body.data(), check);
  if (x.size() % 2 != 0) {  // the last value is not in a whole word: crc32cUpdateCopy copied it unvisited
    std::uint32_t u;
    std::memcpy(&u, x.data() + x.size() - 1, 4);
    check(u);
  }
  out.crc = crc;
  out.crc_bytes = out.bytes.size();
  return bad == 0;
}

void fp32BodyRuns(std::span<const std::span<const std::byte>> parts, std::size_t dim,
                  std::vector<std::span<const std::byte>>& runs) {
  if (parts.empty() || parts[0].size() < kCodecHeaderBytes)
    throw DecodeError("fp32 payload: its first part does not hold the codec header");
  ByteReader r(parts[0].first(kCodecHeaderBytes), "fp32 payload");
  const auto h = detail::readHeader(r, CodecId::Fp32, dim);
  if (h.param != 0) throw DecodeError("fp32 payload: unexpected header param " + std::to_string(h.param));
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const auto run = k == 0 ? parts[0].subspan(kCodecHeaderBytes) : parts[k];
    if (run.size() % 4 != 0) throw DecodeError("fp32 payload: a part boundary splits a value");
    bytes += run.size();
    if (!run.empty()) runs.push_back(run);
  }
  if (bytes != 4ull * h.dim)
    throw DecodeError("fp32 payload: " + std::to_string(bytes) + " value bytes for " + std::to_string(h.dim) + " values");
}

namespace {
// Σ_i (a_i - b_i)² in double, summed in 8 lanes: a strict left-to-right double sum does not vectorize, and
// the order changes only the last bits of a reported metric, never the state. Inlined into each clone.
inline double squaredChange(const float* __restrict a, const float* __restrict b, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  double lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) {
      const double d = static_cast<double>(a[i + l] - b[i + l]);
      lane[l] += d * d;
    }
  double sum = 0;
  for (; i < n; ++i) {
    const double d = static_cast<double>(a[i] - b[i]);
    sum += d * d;
  }
  for (double v : lane) sum += v;
  return sum;
}

// One block of fp32Mix: 4,096 floats (16 KiB of out) stay in L1/L2 while every body adds into them. Written
// for the vectorizer: restrict pointers, finiteness as an integer test of the exponent bits (inf and NaN
// have all eight set), and the squared change summed in lanes (squaredChange).
GOSSIP_VECTOR_CLONES double mixBlock(float self, const float* __restrict own, const std::byte* const* bodies,
                                     std::span<const double> weights, std::size_t n, float* __restrict out,
                                     unsigned char* finite) {
  for (std::size_t i = 0; i < n; ++i) out[i] = self * own[i];
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const std::byte* __restrict src = bodies[k];
    const float w = static_cast<float>(weights[k]);
    std::uint32_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t u;
      std::memcpy(&u, src + 4 * i, 4);
      bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
      float f;
      std::memcpy(&f, src + 4 * i, 4);
      out[i] += w * f;
    }
    if (bad) finite[k] = 0;
  }
  return squaredChange(out, own, n);
}
// One block of fp32MixInPlace: the mixed values go to a block-sized scratch first (x's old values are
// needed for the change), then back into x with the step.
GOSSIP_VECTOR_CLONES double mixBlockInPlace(float self, float* __restrict x, const std::byte* const* bodies,
                                            std::span<const double> weights, std::size_t n,
                                            float* __restrict mixed, const float* __restrict g, float step) {
  for (std::size_t i = 0; i < n; ++i) mixed[i] = self * x[i];
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const std::byte* __restrict src = bodies[k];
    const float w = static_cast<float>(weights[k]);
    for (std::size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, src + 4 * i, 4);
      mixed[i] += w * f;
    }
  }
  const double sum = squaredChange(mixed, x, n);
  if (g) {
    for (std::size_t j = 0; j < n; ++j) x[j] = mixed[j] - step * g[j];
  } else {
    for (std::size_t j = 0; j < n; ++j) x[j] = mixed[j];
  }
  return sum;
}

GOSSIP_VECTOR_CLONES bool allFinite(const std::byte* src, std::size_t n) {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, src + 4 * i, 4);
    bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
  }
  return bad == 0;
}
}  // namespace

bool fp32Finite(Fp32Runs body) {
  for (const auto& run : body)
    if (!allFinite(run.data(), run.size() / 4)) return false;
  return true;
}

namespace {
constexpr std::size_t kBlock = 4096;

// The checks both mixes make before their pass: a bug of the caller, not a bad message (the bodies' lengths
// were checked when they were taken out of their payloads).
void checkBodies(const char* who, std::span<const Fp32Runs> bodies, std::size_t weights, std::size_t dim) {
  if (weights != bodies.size())
    throw Error(std::string(who) + ": " + std::to_string(bodies.size()) + " bodies, " + std::to_string(weights) + " weights");
  for (const Fp32Runs& b : bodies) {
    std::size_t bytes = 0;
    for (const auto& run : b) bytes += run.size();
    if (bytes != 4 * dim) throw Error(std::string(who) + ": a body of " + std::to_string(bytes) + " bytes");
  }
}
}  // namespace

double fp32MixInPlace(float self, std::span<float> x, std::span<const Fp32Runs> bodies,
                      std::span<const double> weights, std::span<const float> g, float step) {
  checkBodies("fp32MixInPlace", bodies, weights.size(), x.size());
  if (!g.empty() && g.size() != x.size())
    throw Error("fp32MixInPlace: g of " + std::to_string(g.size()) + " for " + std::to_string(x.size()) + " values");
  thread_local Fp32RunWalk walk;
  walk.reset(bodies);
  float mixed[kBlock];
  double sum = 0;
  for (std::size_t first = 0; first < x.size();) {
    const std::size_t n = walk.next(first, x.size(), kBlock);
    sum += mixBlockInPlace(self, x.data() + first, walk.at(), weights, n, mixed,
                           g.empty() ? nullptr : g.data() + first, step);
    first += n;
  }
  return sum;
}

Fp32MixResult fp32Mix(float self, std::span<const float> own, std::span<const Fp32Runs> bodies,
                      std::span<const double> weights, std::span<float> out) {
  checkBodies("fp32Mix", bodies, weights.size(), own.size());
  if (out.size() != own.size())
    throw Error("fp32Mix: out of " + std::to_string(out.size()) + " for " + std::to_string(own.size()) + " values");
  // One flag per body, any number of them (a complete graph of thousands in the simulator); per thread,
  // so a round allocates nothing once it has grown.
  thread_local std::vector<unsigned char> finite;
  finite.assign(bodies.size(), 1);
  thread_local Fp32RunWalk walk;
  walk.reset(bodies);
  Fp32MixResult r;
  for (std::size_t first = 0; first < own.size();) {
    const std::size_t n = walk.next(first, own.size(), kBlock);
    r.squared_change += mixBlock(self, own.data() + first, walk.at(), weights, n, out.data() + first, finite.data());
    first += n;
  }
  r.bad = static_cast<std::size_t>(std::find(finite.begin(), finite.end(), 0) - finite.begin());
  return r;
}

std::unique_ptr<Compressor> makeFp16(const CompressorSpec&) { return std::make_unique<Cast16<Fp16Format>>(); }
std::unique_ptr<Compressor> makeBf16(const CompressorSpec&) { return std::make_unique<Cast16<Bf16Format>>(); }

}  // namespace gossip::compress
