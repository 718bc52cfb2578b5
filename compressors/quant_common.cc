#include "compressors/quant_common.h"

#include <bit>
#include <cmath>
#include <limits>

#include "compressors/field_pack.h"
#include "compressors/simd.h"

namespace gossip::compress::detail {
namespace {
// Independent partial sums: a single accumulator would be a serial dependency chain that the compiler
// may not reorder (no -ffast-math), while 8 lanes let it vectorize and pipeline the loop.
constexpr std::size_t kLanes = 8;
}  // namespace

template <class T>
GOSSIP_VECTOR_CLONES double sumAbs(const T* x, std::size_t n) {
  double acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += std::fabs(static_cast<double>(x[i + j]));
  double s = 0.0;
  for (; i < n; ++i) s += std::fabs(static_cast<double>(x[i]));
  for (double a : acc) s += a;
  return s;
}

template <class T>
GOSSIP_VECTOR_CLONES double sumSquares(const T* x, std::size_t n) {
  double acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) {
      const auto v = static_cast<double>(x[i + j]);
      acc[j] += v * v;
    }
  double s = 0.0;
  for (; i < n; ++i) {
    const auto v = static_cast<double>(x[i]);
    s += v * v;
  }
  for (double a : acc) s += a;
  return s;
}

// float: the max of |x| on bit patterns. For non-negative floats the integer order is the float order, and
// inf/NaN patterns lie above every finite one, so one integer max finds both the norm and bad input.
template <>
GOSSIP_VECTOR_CLONES double maxAbs<float>(const float* x, std::size_t n) {
  std::int32_t m[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) {
      const std::int32_t a = std::bit_cast<std::int32_t>(x[i + j]) & 0x7FFFFFFF;
      m[j] = a > m[j] ? a : m[j];
    }
  std::int32_t best = 0;
  for (; i < n; ++i) best = std::max(best, std::bit_cast<std::int32_t>(x[i]) & 0x7FFFFFFF);
  for (std::int32_t a : m) best = std::max(best, a);
  if (best >= 0x7F800000) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(std::bit_cast<float>(best));
}

template <class T>
GOSSIP_VECTOR_CLONES double maxAbs(const T* x, std::size_t n) {
  // m tracks max |x|; chk sums x - x, which is 0 for finite x and NaN for inf or NaN, because a max
  // written as a comparison silently drops NaN.
  T m[kLanes] = {};
  T chk[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t j = 0; j < kLanes; ++j) {
      const T v = x[i + j];
      const T a = std::fabs(v);
      m[j] = a > m[j] ? a : m[j];
      chk[j] += v - v;
    }
  T best = 0;
  T bad = 0;
  for (; i < n; ++i) {
    const T a = std::fabs(x[i]);
    best = a > best ? a : best;
    bad += x[i] - x[i];
  }
  for (std::size_t j = 0; j < kLanes; ++j) {
    best = m[j] > best ? m[j] : best;
    bad += chk[j];
  }
  if (!(bad == 0)) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(best);
}

template double sumAbs<float>(const float*, std::size_t);
template double sumAbs<double>(const double*, std::size_t);
template double sumSquares<float>(const float*, std::size_t);
template double sumSquares<double>(const double*, std::size_t);
template double maxAbs<double>(const double*, std::size_t);

std::byte* beginPayload(Encoded& out, CodecId codec, std::uint16_t param, std::uint32_t dim,
                        std::size_t totalBytes) {
  GOSSIP_CHECK(totalBytes >= kCodecHeaderBytes, "payload size ", totalBytes);
  out.crc.reset();  // whoever computes the checksum sets it after writing the bytes
  out.bytes.resize(totalBytes);
  std::byte* p = out.bytes.data();
  p[0] = static_cast<std::byte>(codec);
  p[1] = static_cast<std::byte>(kCodecVersion);
  std::memcpy(p + 2, &param, 2);
  std::memcpy(p + 4, &dim, 4);
  return p + kCodecHeaderBytes;
}

std::span<const std::byte> readScales(ByteReader& r, std::uint32_t nb, const char* codecName) {
  const auto scales = r.take(4 * std::size_t{nb});
  bool ok = true;
  for (std::uint32_t b = 0; b < nb; ++b) {
    const float s = getScale(scales.data(), b);
    ok &= std::isfinite(s) && s >= 0.0f;
  }
  if (!ok) throw DecodeError(std::string(codecName) + " payload: non-finite or negative scale");
  return scales;
}

void expectParam(const Header& h, std::uint16_t want, const char* codecName) {
  if (h.param != want)
    throw DecodeError(std::string(codecName) + " payload: header param " + std::to_string(h.param) +
                      " does not match configured " + std::to_string(want));
}

void expectCleanPadding(std::span<const std::byte> fields, std::size_t n, unsigned width, const char* codecName) {
  if (!fieldPaddingIsZero(fields.data(), n, width))
    throw DecodeError(std::string(codecName) + " payload: nonzero padding bits");
}

}  // namespace gossip::compress::detail
