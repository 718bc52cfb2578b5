#include "daemon/bridge/param_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "core/error.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gossip::daemon {
namespace {

constexpr std::size_t kParallelMin = std::size_t{1} << 20;  // values; below this one thread
constexpr std::size_t kChunkAlign = 64;                      // chunk starts a multiple of this many values

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

void widen(const float* s, double* d, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i < n && !aligned16(d + i); ++i) d[i] = s[i];  // the streaming store needs a 16-byte aligned target
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(s + i);
    _mm_stream_pd(d + i, _mm_cvtps_pd(v));
    _mm_stream_pd(d + i + 2, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
  }
  _mm_sfence();  // streaming stores are weakly ordered: make them visible before the caller goes on
#endif
  for (; i < n; ++i) d[i] = s[i];
}

void narrow(const double* s, float* d, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i < n && !aligned16(d + i); ++i) d[i] = static_cast<float>(s[i]);
  for (; i + 4 <= n; i += 4) {
    const __m128 lo = _mm_cvtpd_ps(_mm_loadu_pd(s + i));
    const __m128 hi = _mm_cvtpd_ps(_mm_loadu_pd(s + i + 2));
    _mm_stream_ps(d + i, _mm_movelh_ps(lo, hi));
  }
  _mm_sfence();
#endif
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

// bfloat16 kernels: plain loops over the scalar rule, which the compiler vectorises (-O2 with SSE2); the
// shared memory side is half the bytes of float32, so no streaming-store variant was needed.
template <class R>
void fromBf16(const std::uint16_t* s, R* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<R>(bf16ToFloat(s[i]));
}
template <class R>
void toBf16(const R* s, std::uint16_t* d, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = floatToBf16(static_cast<float>(s[i]));
}

// An empty span may carry a null pointer, and memcpy's pointers must not be null even for 0 bytes.
template <class T>
void copy(const T* s, T* d, std::size_t n) {
  if (n > 0) std::memcpy(d, s, n * sizeof(T));
}

// Runs kernel over [0, n) in `threads` contiguous chunks, the first on the calling thread.
template <class Src, class Dst>
void split(void (*kernel)(const Src*, Dst*, std::size_t), const Src* s, Dst* d, std::size_t n, unsigned threads) {
  if (threads <= 1 || n < kParallelMin) return kernel(s, d, n);
  const std::size_t per = ((n + threads - 1) / threads + kChunkAlign - 1) / kChunkAlign * kChunkAlign;  // covers n
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  std::size_t inlineFrom = n;  // a chunk no thread could be started for is done here
  for (unsigned k = 1; k < threads && inlineFrom == n; ++k) {
    const std::size_t begin = std::min(n, k * per), end = std::min(n, begin + per);
    if (begin >= end) break;
    try {
      helpers.emplace_back(kernel, s + begin, d + begin, end - begin);
    } catch (const std::system_error&) {  // out of threads: still correct, only slower
      inlineFrom = begin;
    }
  }
  kernel(s, d, std::min(n, per));
  if (inlineFrom < n) kernel(s + inlineFrom, d + inlineFrom, n - inlineFrom);
  for (auto& h : helpers) h.join();
}

}  // namespace

unsigned copyThreads(unsigned configured) {
  if (configured > 0) return configured;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

void widenInto(std::span<const float> src, std::span<double> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "widenInto: ", src.size(), " values into ", dst.size());
  split(widen, src.data(), dst.data(), src.size(), threads);
}

void narrowInto(std::span<const double> src, std::span<float> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "narrowInto: ", src.size(), " values into ", dst.size());
  split(narrow, src.data(), dst.data(), src.size(), threads);
}

void copyInto(std::span<const double> src, std::span<double> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "copyInto: ", src.size(), " values into ", dst.size());
  split(copy<double>, src.data(), dst.data(), src.size(), threads);
}

void copyInto(std::span<const float> src, std::span<float> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "copyInto: ", src.size(), " values into ", dst.size());
  split(copy<float>, src.data(), dst.data(), src.size(), threads);
}

float bf16ToFloat(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint16_t floatToBf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN: keep it one
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even; the carry may reach the exponent (inf)
  return static_cast<std::uint16_t>(u >> 16);
}

void convertInto(std::span<const std::uint16_t> src, std::span<float> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "convertInto: ", src.size(), " bfloat16 values into ", dst.size());
  split(fromBf16<float>, src.data(), dst.data(), src.size(), threads);
}
void convertInto(std::span<const std::uint16_t> src, std::span<double> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "convertInto: ", src.size(), " bfloat16 values into ", dst.size());
  split(fromBf16<double>, src.data(), dst.data(), src.size(), threads);
}
void convertInto(std::span<const float> src, std::span<std::uint16_t> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "convertInto: ", src.size(), " values into ", dst.size(), " bfloat16");
  split(toBf16<float>, src.data(), dst.data(), src.size(), threads);
}
void convertInto(std::span<const double> src, std::span<std::uint16_t> dst, unsigned threads) {
  GOSSIP_CHECK(src.size() == dst.size(), "convertInto: ", src.size(), " values into ", dst.size(), " bfloat16");
  split(toBf16<double>, src.data(), dst.data(), src.size(), threads);
}

}  // namespace gossip::daemon
