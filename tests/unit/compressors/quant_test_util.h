#pragma once
// Helpers for the quantizer tests (test_quantizers.cc): input distributions, encode + decode into a
// dense double vector, squared errors, and the configurations every sweep runs over.
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "core/bitpack.h"
#include "core/error.h"
#include "core/rng.h"

namespace quant_test {

using gossip::Rng;
namespace gc = gossip::compress;

enum class Dist { Gaussian, GaussLogNormal, Sparse, Constant, E1 };
inline constexpr Dist kAllDists[] = {Dist::Gaussian, Dist::GaussLogNormal, Dist::Sparse, Dist::Constant, Dist::E1};

inline const char* distName(Dist d) {
  switch (d) {
    case Dist::Gaussian: return "gaussian";
    case Dist::GaussLogNormal: return "gaussian x lognormal";
    case Dist::Sparse: return "sparse";
    case Dist::Constant: return "constant";
    case Dist::E1: return "e_1";
  }
  return "?";
}

// Values are rounded to fp32 so that float and double inputs hold the same numbers.
inline std::vector<double> draw(Dist d, std::size_t n, Rng& rng) {
  std::vector<double> x(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case Dist::Gaussian: x[i] = rng.normal(); break;
      case Dist::GaussLogNormal: x[i] = rng.normal() * std::exp(rng.normal()); break;
      case Dist::Sparse: x[i] = rng.uniform() < 0.05 ? 10.0 * rng.normal() : 0.0; break;
      case Dist::Constant: x[i] = -0.7; break;
      case Dist::E1: x[i] = i == 0 ? 1.0 : 0.0; break;
    }
    x[i] = static_cast<float>(x[i]);
  }
  if (d == Dist::Sparse && n > 0) x[n / 2] = 3.25;  // never all zero
  return x;
}

template <class T>
std::vector<T> as(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

// decode(encode(x)) with Rng(seed), added to zeros, as doubles. The payload is left in enc.
template <class T>
std::vector<double> roundTrip(const gc::Compressor& c, const std::vector<T>& x, std::uint64_t seed, gc::Encoded& enc) {
  Rng rng(seed);
  c.encode(std::span<const T>(x), rng, enc);
  std::vector<T> acc(x.size(), T(0));
  c.decodeAdd(enc.view(), std::span<T>(acc), 1.0);
  return std::vector<double>(acc.begin(), acc.end());
}

inline std::vector<double> roundTrip(const gc::Compressor& c, const std::vector<double>& x, std::uint64_t seed) {
  gc::Encoded enc;
  return roundTrip(c, x, seed, enc);
}

inline double sqNorm(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a * a;
  return s;
}

inline double sqDist(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

// Mean over `draws` seeds of ||C(x) - x||^2 / ||x||^2.
inline double errorRatio(const gc::Compressor& c, const std::vector<double>& x, int draws, std::uint64_t seed0) {
  double sum = 0;
  for (int k = 0; k < draws; ++k) sum += sqDist(roundTrip(c, x, seed0 + static_cast<std::uint64_t>(k)), x);
  return sum / draws / sqNorm(x);
}

// The bound quality() promises for E||C(x) - x||^2 / ||x||^2.
inline double errorBound(const gc::Quality& q) {
  return q.kind == gc::Quality::Kind::Contraction ? 1.0 - q.value : q.value;
}

// One spec per codec family and interesting parameter choice (block codecs also with short blocks).
inline std::vector<gc::CompressorSpec> quantizerSpecs() {
  return {
      {.name = "fp16"},
      {.name = "bf16"},
      {.name = "sign"},
      {.name = "sign", .block = 7},
      {.name = "qsgd", .levels = 16, .unbiased = true},
      {.name = "qsgd", .levels = 4, .unbiased = true},
      {.name = "qsgd", .levels = 1, .unbiased = true},
      {.name = "qsgd", .levels = 16},
      {.name = "qsgd", .levels = 3, .block = 7},
      {.name = "lead", .bits = 1},
      {.name = "lead", .bits = 2},
      {.name = "lead", .bits = 4, .block = 7},
      {.name = "lead", .bits = 8},
      {.name = "natural"},
      {.name = "dither", .levels = 8},
      {.name = "dither", .levels = 4, .inf_norm = false},
      {.name = "dither", .levels = 2, .block = 7},
      {.name = "topk_natural", .ratio = 0.05},
      {.name = "topk_dither", .ratio = 0.05, .levels = 8},
      {.name = "topk_dither", .ratio = 0.05, .levels = 2, .inf_norm = false},
  };
}

inline std::string label(const gc::CompressorSpec& s) {
  const auto c = gc::makeCompressor(s);
  return std::string(c->name());
}

// Bits to hold 0..v.
inline unsigned bitsToHold(unsigned v) {
  unsigned b = 1;
  while ((1ull << b) <= v) ++b;
  return b;
}

inline std::size_t packed(std::size_t n, unsigned w) { return (n * w + 63) / 64 * 8; }

inline std::size_t blockCount(std::uint32_t d, std::uint32_t block) {
  if (d == 0) return 0;
  return block == 0 ? 1 : (d + block - 1) / block;
}

// Runs fn() and checks it throws DecodeError; returns false otherwise.
template <class Fn>
bool throwsDecodeError(Fn&& fn) {
  try {
    fn();
  } catch (const gossip::DecodeError&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace quant_test
