#include "compressors/select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

#include "core/bitpack.h"
#include "core/error.h"
#include "core/float_words.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gossip::compress {
namespace {

// ---------------------------------------------------------------- selection
//
// Strategy for large inputs (d >= kDirectBelow): pick a threshold t from a deterministic strided sample
// so that roughly k * (1 + margin) entries satisfy |x_i| >= t, collect those candidates in one pass
// (ascending index order for free), then select exactly among the candidates. If the sample
// under-estimated and fewer than k entries pass, the threshold is lowered and the pass repeated; the last
// resort threshold is 0, which admits every entry, so the loop always terminates with an exact answer.
//
// The exact step never sorts: nth_element on a copy of the candidate magnitudes gives the k-th largest
// magnitude v. Everything above v is kept, and of the entries equal to v only the lowest-index ones
// needed to reach k, which is the required tie-break. A final scan over the (index-ordered) candidates
// emits the indices already sorted.
//
// selectTopK's input is assumed NaN-free (as its callers guarantee by construction; decoders reject
// non-finite values). A NaN would count as a huge magnitude in the bit-pattern scan; nothing reads out of
// bounds, but the result is unspecified and the final count check may throw. addAndSelectTopK checks its x
// instead: its sample maps a NaN sum to +inf (nth_element needs an order), and its pass reports the NaN.

constexpr std::size_t kDirectBelow = 1u << 14;  // below this, every entry is a candidate
constexpr std::size_t kSampleSize = 1u << 15;
constexpr std::size_t kBlock = 32;  // entries tested together before any per-entry work

#if defined(__SSE2__)
// Bit j set iff |p[j]| >= t for j < 32, with tb = bits of t >= 0. SSE2 is part of x86-64, so this needs
// no dispatch; the four-way packs turn 32 compares into one movemask per 16 entries.
inline std::uint32_t hitMask32(const float* p, std::int32_t tb) {
  const __m128i thr = _mm_set1_epi32(tb - 1);  // v > tb - 1  <=>  v >= tb
  const __m128i mag = _mm_set1_epi32(0x7FFFFFFF);
  auto ge4 = [&](const float* q) {
    return _mm_cmpgt_epi32(_mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)), mag), thr);
  };
  auto mask16 = [&](const float* q) {
    const __m128i lo = _mm_packs_epi32(ge4(q), ge4(q + 4));
    const __m128i hi = _mm_packs_epi32(ge4(q + 8), ge4(q + 12));
    return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
  };
  return mask16(p) | (mask16(p + 16) << 16);
}
#endif

template <class T>
struct Scratch {
  std::vector<std::uint32_t> cand;  // candidate indices, ascending
  std::vector<T> candMag;           // |x| of each candidate, same order
  std::vector<T> work;              // sample / copy of candMag permuted by nth_element
};

// One scratch set per thread: selection is called from const codec methods that may run concurrently,
// and reusing the buffers keeps the hot path free of allocations after the first call.
template <class T>
Scratch<T>& scratch() {
  thread_local Scratch<T> s;
  return s;
}

// Keeps exactly k of the candidates (k <= cand.size()), preserving ascending index order.
template <class T>
void exactAmongCandidates(std::uint32_t k, Scratch<T>& s, std::vector<std::uint32_t>& idx) {
  const std::size_t n = s.cand.size();
  idx.clear();
  if (n == k) {
    idx.assign(s.cand.begin(), s.cand.end());
    return;
  }
  s.work.assign(s.candMag.begin(), s.candMag.end());
  // k-th largest magnitude sits at position k-1 under a descending order.
  std::nth_element(s.work.begin(), s.work.begin() + (k - 1), s.work.end(), std::greater<T>());
  const T v = s.work[k - 1];
  std::size_t above = 0;
  for (std::size_t j = 0; j < n; ++j) above += (s.candMag[j] > v);
  std::size_t tiesLeft = k - above;  // >= 1 because v itself is among the top k
  idx.resize(k);
  std::size_t out = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const T a = s.candMag[j];
    if (a > v) {
      idx[out++] = s.cand[j];
    } else if (a == v && tiesLeft > 0) {
      idx[out++] = s.cand[j];
      --tiesLeft;
    }
  }
  GOSSIP_CHECK(out == k, "top-k selection lost entries");
}

// Collects every index with |x_i| >= t (t >= 0) and its magnitude. Works on the IEEE bit patterns with
// the sign bit cleared: for non-negative non-NaN floats their order is the integer order, and integer
// compares vectorize without fast-math. A block whose compares are all false (most blocks, for a high
// threshold) costs a few vector instructions; in a hit block only the hits are visited.
// `prepBlock(i)` runs before block [i, i + 32) is read and `prepOne(i)` before a tail value i: nothing for
// collectAtLeast, the add that makes the values for addAndCollectAtLeast.
template <class T, class PrepBlock, class PrepOne>
void collectWith(const T* p, std::size_t d, T t, Scratch<T>& s, PrepBlock prepBlock, PrepOne prepOne) {
  using I = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  static_assert(sizeof(I) == sizeof(T));
  constexpr I kMag = std::numeric_limits<I>::max();
  const I tb = std::bit_cast<I>(t);
  std::size_t n = 0;
  // The buffers only grow (sized in whole blocks) and are trimmed to n at the end: capacity is kept,
  // so steady-state calls do not allocate.
  if (s.cand.size() < 4 * kBlock) s.cand.resize(4 * kBlock), s.candMag.resize(4 * kBlock);
  auto ensureBlock = [&] {
    if (n + kBlock > s.cand.size()) s.cand.resize(2 * s.cand.size()), s.candMag.resize(2 * s.candMag.size());
  };
  std::size_t i = 0;
  for (; i + kBlock <= d; i += kBlock) {
    prepBlock(i);
    std::uint32_t m = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>) {
      m = hitMask32(p + i, tb);
    } else
#endif
    {
      I bits[kBlock];
      std::memcpy(bits, p + i, sizeof bits);
      for (std::size_t j = 0; j < kBlock; ++j) m |= static_cast<std::uint32_t>((bits[j] & kMag) >= tb) << j;
    }
    if (m == 0) continue;
    ensureBlock();
    do {
      const auto j = static_cast<unsigned>(std::countr_zero(m));
      m &= m - 1;
      s.cand[n] = static_cast<std::uint32_t>(i + j);
      s.candMag[n++] = std::abs(p[i + j]);
    } while (m != 0);
  }
  ensureBlock();
  for (; i < d; ++i) {
    prepOne(i);
    const T a = std::abs(p[i]);
    if (a >= t) s.cand[n] = static_cast<std::uint32_t>(i), s.candMag[n++] = a;
  }
  s.cand.resize(n);
  s.candMag.resize(n);
}

template <class T>
void collectAtLeast(std::span<const T> x, T t, Scratch<T>& s) {
  collectWith(x.data(), x.size(), t, s, [](std::size_t) {}, [](std::size_t) {});
}

// One block of collectAtLeast's loop fused with the add that makes its input: m[0..32) += x[0..32). The
// hit test then reads the sums while they are still in L1. Returns 1 if some x_j of the block is not finite
// (its exponent bits all set).
template <class T>
std::uint32_t addBlock(T* m, const T* x) {
  std::uint32_t bad = 0;
  for (std::size_t j = 0; j < kBlock; ++j) {
    bad |= nonFiniteBits(x[j]);
    m[j] += x[j];
  }
  return bad;
}

// m += x and collectAtLeast(m, t) in one pass over both vectors, where they were two passes (and a third,
// the caller's finiteness check of x): each block is added, then tested while its sums are in L1. Returns
// false when some x_i is not finite: m then holds the sums and the candidates mean nothing.
template <class T>
bool addAndCollectAtLeast(std::span<T> m, std::span<const T> x, T t, Scratch<T>& s) {
  T* pm = m.data();
  const T* px = x.data();
  std::uint32_t bad = 0;
  collectWith<T>(
      pm, m.size(), t, s, [&](std::size_t i) { bad |= addBlock(pm + i, px + i); },
      [&](std::size_t i) {
        bad |= static_cast<std::uint32_t>(!std::isfinite(px[i]));
        pm[i] += px[i];
      });
  return bad == 0;
}

// The k largest |x_i| into idx (ascending). The first pass over x is `firstCollect(t)`: collectAtLeast(x,
// t), or for addAndSelectTopK the add that makes x fused with it; the sample is read through `sampleAt`,
// which for the fused path adds on the fly (the sample comes before the pass). False when firstCollect
// reports bad input (nothing is selected then).
template <class T, class SampleAt, class FirstCollect>
bool selectWith(std::span<const T> x, std::uint32_t k, std::vector<std::uint32_t>& idx, SampleAt sampleAt,
                FirstCollect firstCollect) {
  const std::size_t d = x.size();
  GOSSIP_CHECK(k > 0 && k < d, "selectWith: k out of range");
  idx.clear();
  auto& s = scratch<T>();
  if (d < kDirectBelow) {
    if (!firstCollect(T(0))) return false;  // every entry is a candidate
    exactAmongCandidates(k, s, idx);
    return true;
  }

  // Deterministic strided sample of magnitudes. Each attempt partially orders it for one rank only.
  const std::size_t stride = std::max<std::size_t>(1, d / kSampleSize);
  const std::size_t m = std::min(kSampleSize, d / stride);  // j * stride + stride / 2 < d for j < m
  auto& sample = s.work;
  sample.resize(m);
  for (std::size_t j = 0; j < m; ++j) sample[j] = std::abs(sampleAt(j * stride + stride / 2));

  // Rank in the sample of the true k-th magnitude, plus three standard deviations (binomial) so that one
  // pass nearly always suffices; an under-estimate costs another pass at a lower threshold.
  const double expect = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(d);
  double rank = expect + 3.0 * std::sqrt(expect) + 2.0;
  for (bool first = true;; first = false) {
    T t = 0;
    if (rank < static_cast<double>(m)) {
      const auto r = static_cast<std::size_t>(rank);
      std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(r), sample.end(),
                       std::greater<T>());
      t = sample[r];
    }
    if (!first)
      collectAtLeast(x, t, s);
    else if (!firstCollect(t))
      return false;
    if (s.cand.size() >= k) break;
    GOSSIP_CHECK(t > 0, "top-k threshold 0 admitted fewer than k entries");  // only with NaN input
    rank *= 4.0;
  }
  exactAmongCandidates(k, s, idx);
  return true;
}

// k == 0 and k >= d need no selection: idx is then empty or every index.
bool trivialSelection(std::size_t d, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  idx.clear();
  if (k != 0 && k < d) return false;
  if (k != 0) {
    idx.resize(d);
    for (std::size_t i = 0; i < d; ++i) idx[i] = static_cast<std::uint32_t>(i);
  }
  return true;
}

template <class T>
void selectImpl(std::span<const T> x, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  GOSSIP_CHECK(x.size() <= 0xFFFFFFFFull, "selectTopK input longer than 2^32-1");
  if (trivialSelection(x.size(), k, idx)) return;
  auto& s = scratch<T>();
  selectWith<T>(
      x, k, idx, [&](std::size_t i) { return x[i]; },
      [&](T t) {
        collectAtLeast(x, t, s);
        return true;
      });
}

template <class T>
bool addAndSelectImpl(std::span<T> m, std::span<const T> x, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  GOSSIP_CHECK(m.size() == x.size(), "addAndSelectTopK: the vectors' sizes differ");
  GOSSIP_CHECK(x.size() <= 0xFFFFFFFFull, "selectTopK input longer than 2^32-1");
  if (trivialSelection(x.size(), k, idx)) {
    std::uint32_t bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      bad |= static_cast<std::uint32_t>(!std::isfinite(x[i]));
      m[i] += x[i];
    }
    return bad == 0;
  }
  auto& s = scratch<T>();
  return selectWith<T>(
      std::span<const T>(m), k, idx,
      [&](std::size_t i) {
        const T sum = m[i] + x[i];
        return std::isnan(sum) ? std::numeric_limits<T>::infinity() : sum;
      },
      [&](T t) { return addAndCollectAtLeast(m, x, t, s); });
}

}  // namespace

void selectTopK(std::span<const float> x, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  selectImpl(x, k, idx);
}
void selectTopK(std::span<const double> x, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  selectImpl(x, k, idx);
}
bool addAndSelectTopK(std::span<float> m, std::span<const float> x, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  return addAndSelectImpl(m, x, k, idx);
}
bool addAndSelectTopK(std::span<double> m, std::span<const double> x, std::uint32_t k,
                      std::vector<std::uint32_t>& idx) {
  return addAndSelectImpl(m, x, k, idx);
}

namespace {

// ---------------------------------------------------------------- index coding

enum class IndexForm : std::uint8_t { Packed = 0, Bitmap = 1 };

unsigned indexBits(std::uint32_t dim) { return dim <= 1 ? 1u : bitsFor(dim - 1); }
std::size_t packedSize(std::uint32_t dim, std::uint32_t k) { return packedBytes(k, indexBits(dim)); }
std::size_t bitmapSize(std::uint32_t dim) { return packedBytes(dim, 1); }

// The form is a pure function of (dim, k): encoder and decoder agree on it, so a payload carrying the
// other form is malformed rather than merely unusual, and payload sizes are exact.
IndexForm chooseForm(std::uint32_t dim, std::uint32_t k) {
  return bitmapSize(dim) < packedSize(dim, k) ? IndexForm::Bitmap : IndexForm::Packed;
}

}  // namespace

std::size_t indexBytes(std::uint32_t dim, std::uint32_t k) {
  return 1 + std::min(packedSize(dim, k), bitmapSize(dim));
}

void writeIndices(std::span<const std::uint32_t> sortedIdx, std::uint32_t dim, ByteWriter& w) {
  GOSSIP_CHECK(sortedIdx.size() <= dim, "more indices than dim");
  const auto k = static_cast<std::uint32_t>(sortedIdx.size());
  for (std::size_t j = 0; j < k; ++j)
    GOSSIP_CHECK(sortedIdx[j] < dim && (j == 0 || sortedIdx[j - 1] < sortedIdx[j]),
                 "indices must be strictly increasing and < dim");
  const IndexForm form = chooseForm(dim, k);
  w.put(static_cast<std::uint8_t>(form));
  if (form == IndexForm::Packed) {
    const unsigned bits = indexBits(dim);
    BitWriter bw(w.reserveTail(packedSize(dim, k)));
    for (std::uint32_t i : sortedIdx) bw.put(i, bits);
    bw.finish();
  } else {
    std::byte* dst = w.reserveTail(bitmapSize(dim));  // zero-filled by reserveTail
    for (std::uint32_t i : sortedIdx) dst[i / 8] |= std::byte{static_cast<unsigned char>(1u << (i % 8))};
  }
}

void readIndices(ByteReader& r, std::uint32_t dim, std::uint32_t k, std::vector<std::uint32_t>& idx) {
  if (k > dim) throw DecodeError("index count " + std::to_string(k) + " exceeds dim " + std::to_string(dim));
  const auto form = r.get<std::uint8_t>();
  const IndexForm expected = chooseForm(dim, k);
  if (form != static_cast<std::uint8_t>(expected))
    throw DecodeError("index form " + std::to_string(form) + " is not the canonical one for dim " +
                      std::to_string(dim) + ", k " + std::to_string(k));
  idx.resize(k);
  if (expected == IndexForm::Packed) {
    const unsigned bits = indexBits(dim);
    BitReader br(r.take(packedSize(dim, k)).data());
    std::uint64_t prev = 0;
    for (std::uint32_t j = 0; j < k; ++j) {
      const std::uint64_t i = br.get(bits);
      if (i >= dim || (j > 0 && i <= prev))
        throw DecodeError("index " + std::to_string(i) + " out of order or >= dim " + std::to_string(dim));
      idx[j] = static_cast<std::uint32_t>(i);
      prev = i;
    }
    return;
  }
  auto bitmap = r.take(bitmapSize(dim));
  std::uint32_t n = 0;
  for (std::size_t wi = 0; wi < bitmap.size() / 8; ++wi) {
    std::uint64_t word;
    std::memcpy(&word, bitmap.data() + 8 * wi, 8);
    while (word != 0) {
      const std::uint64_t i = 64 * wi + static_cast<unsigned>(std::countr_zero(word));
      word &= word - 1;
      if (i >= dim) throw DecodeError("bitmap index " + std::to_string(i) + " >= dim " + std::to_string(dim));
      if (n == k) throw DecodeError("bitmap holds more than " + std::to_string(k) + " indices");
      idx[n++] = static_cast<std::uint32_t>(i);
    }
  }
  if (n != k) throw DecodeError("bitmap holds " + std::to_string(n) + " indices, expected " + std::to_string(k));
}

}  // namespace gossip::compress
