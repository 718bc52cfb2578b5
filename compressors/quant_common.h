#pragma once
// Pieces shared by the quantizing codecs (sign, qsgd, lead, natural, dither, topk_natural/topk_dither):
// block layout, stochastic rounding of one level, block norms and the scale section of a payload.
//
// Payload shape of the block codecs (sign, qsgd, lead, dither):
//   header (8 B) | nb x f32 scale, one per block in block order | field stream (field_pack.h)
// with nb = ceil(dim / block); block 0 (or block >= dim) means one block covering the vector, and dim 0
// has no block at all. The block length is configuration, not wire data: both ends run the same
// configuration (ALGORITHMS.md §7), and the header param carries the level count so that a mismatch is
// rejected instead of being decoded with the wrong levels.
//
// Stochastic rounding: element i is rounded with uniform U_i of the encode's UniformStream (uniforms.h),
// seeded from the injected Rng. Every element consumes its uniform, also in all-zero blocks, so a given
// (input, seed) always gives the same bytes and the stream position depends on i only.
//
// Non-finite input: encoders never throw on data. A block containing inf/NaN gets a non-finite scale
// (C_nat: a reserved code), so every decoder, including the sender's own decodeAdd, rejects the payload
// with DecodeError instead of mixing garbage into a model.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>

#include "compressors/codec_base.h"
#include "compressors/compressor.h"
#include "core/bytes.h"
#include "core/error.h"

namespace gossip::compress::detail {

struct Blocks {
  std::uint32_t dim = 0;
  std::uint32_t len = 1;    // elements per block; the last block may be shorter
  std::uint32_t count = 0;  // nb

  static Blocks of(std::uint32_t dim, std::uint32_t block) {
    Blocks b;
    b.dim = dim;
    b.len = (block == 0 || block >= dim) ? std::max<std::uint32_t>(dim, 1) : block;
    b.count = static_cast<std::uint32_t>((std::uint64_t{dim} + b.len - 1) / b.len);
    return b;
  }
  std::size_t begin(std::uint32_t i) const { return std::size_t{i} * len; }
  std::size_t end(std::uint32_t i) const { return std::min<std::size_t>(begin(i) + len, dim); }
  // Length of the longest block: the one that sets the worst-case quality bound (0 for dim 0).
  std::uint32_t longest() const { return count == 0 ? 0 : len; }
};

// Calls fn(block, lo, hi) for each piece [lo, hi) of [begin, end) that lies inside one block.
template <class Fn>
void forEachBlockPiece(const Blocks& b, std::size_t begin, std::size_t end, Fn&& fn) {
  while (begin < end) {
    const auto bi = static_cast<std::uint32_t>(begin / b.len);
    const std::size_t stop = std::min(end, b.begin(bi) + b.len);
    fn(bi, begin, stop);
    begin = stop;
  }
}

// A 32-bit uniform as a value in [0, 1): float keeps the top 24 bits and double the top 31, so the
// result is exact and converting through int32 keeps the loops vectorizable.
template <class T>
inline T unitUniform(std::uint32_t u) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(static_cast<std::int32_t>(u >> 8)) * 0x1p-24f;
  else
    return static_cast<double>(static_cast<std::int32_t>(u >> 1)) * 0x1p-31;
}

// A block norm the level loops can divide by: positive and finite. Other blocks are all zero, or hold
// inf/NaN (their payload is rejected by every decoder), and are coded as level 0 without looking at x.
inline bool usableNorm(float norm) { return norm > 0.0f && norm <= std::numeric_limits<float>::max(); }

// Stochastic rounding of y = s|x|/N in [0, s]: floor(y) + [U < frac(y)], capped at s because |x|/N can
// round a hair above 1. y must be finite (usableNorm guarantees it): the cap is applied to the integer,
// since a float ?: before the conversion makes GCC split the loop and give up vectorizing it.
template <class T>
inline std::int32_t roundLevel(T y, std::uint32_t u, std::int32_t s) {
  const auto whole = static_cast<std::int32_t>(y);
  const T frac = y - static_cast<T>(whole);
  const std::int32_t level = whole + static_cast<std::int32_t>(unitUniform<T>(u) < frac);
  return level < s ? level : s;
}

// Block norms, accumulated in double. maxAbs returns NaN if any element is inf or NaN (sumAbs and
// sumSquares become non-finite on their own).
template <class T>
double sumAbs(const T* x, std::size_t n);
template <class T>
double sumSquares(const T* x, std::size_t n);
template <class T>
double maxAbs(const T* x, std::size_t n);
template <>
double maxAbs<float>(const float* x, std::size_t n);  // bit-pattern version, quant_common.cc

// Sizes out.bytes to totalBytes (without clearing: the codec rewrites every byte, padding included)
// and writes the common header. Returns a pointer just past the header.
std::byte* beginPayload(Encoded& out, CodecId codec, std::uint16_t param, std::uint32_t dim,
                        std::size_t totalBytes);

inline void putScale(std::byte* scales, std::uint32_t b, float v) { std::memcpy(scales + 4 * std::size_t{b}, &v, 4); }
inline float getScale(const std::byte* scales, std::uint32_t b) {
  float v;
  std::memcpy(&v, scales + 4 * std::size_t{b}, 4);
  return v;
}

// Takes nb scales from r. Each must be finite and non-negative (they are norms), else DecodeError.
std::span<const std::byte> readScales(ByteReader& r, std::uint32_t nb, const char* codecName);

// The header param must equal the value this configuration writes.
void expectParam(const Header& h, std::uint16_t want, const char* codecName);

// Throws DecodeError unless the padding bits after the last of n fields are zero.
void expectCleanPadding(std::span<const std::byte> fields, std::size_t n, unsigned width, const char* codecName);

}  // namespace gossip::compress::detail
