// Top-k selection and sparse index coding (compressors/select.h), and malformed sparse payloads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/select.h"
#include "compressors/shared_support.h"
#include "core/bitpack.h"
#include "core/error.h"
#include "core/rng.h"

namespace gc = gossip::compress;
using gossip::ByteReader;
using gossip::Bytes;
using gossip::ByteWriter;
using gossip::DecodeError;
using gossip::Rng;

namespace {

// Reference: full sort by (|x| descending, index ascending), keep k, then sort the indices.
template <class T>
std::vector<std::uint32_t> referenceTopK(const std::vector<T>& x, std::uint32_t k) {
  std::vector<std::uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const T ma = std::abs(x[a]), mb = std::abs(x[b]);
    return ma != mb ? ma > mb : a < b;
  });
  order.resize(std::min<std::size_t>(k, x.size()));
  std::sort(order.begin(), order.end());
  return order;
}

// Values from a small alphabet (many ties in |x|, both signs) or continuous heavy-tailed ones.
std::vector<float> randomInput(Rng& rng, std::size_t d, bool ties) {
  std::vector<float> x(d);
  for (auto& v : x) {
    if (ties)
      v = static_cast<float>(static_cast<int>(rng.below(9)) - 4);
    else
      v = static_cast<float>(rng.normal() * std::exp(rng.normal()));
  }
  return x;
}

}  // namespace

TEST_CASE("selectTopK matches a full-sort reference - ties broken by lowest index") {
  Rng rng(11);
  std::vector<std::uint32_t> idx;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t d = rng.below(200);
    const bool ties = trial % 2 == 0;
    const auto x = randomInput(rng, d, ties);
    const auto k = static_cast<std::uint32_t>(rng.below(d + 3));
    gc::selectTopK(std::span<const float>(x), k, idx);
    REQUIRE(idx == referenceTopK(x, k));
  }
}

// O(d) characterisation of the exact answer: k sorted indices; every kept |x| >= every dropped |x|; and
// at the boundary magnitude, every kept index is below every dropped one.
template <class T>
bool isExactTopK(const std::vector<T>& x, std::uint32_t k, const std::vector<std::uint32_t>& idx) {
  if (idx.size() != std::min<std::size_t>(k, x.size())) return false;
  if (!std::is_sorted(idx.begin(), idx.end()) || std::adjacent_find(idx.begin(), idx.end()) != idx.end()) return false;
  if (idx.empty()) return true;
  std::vector<char> kept(x.size(), 0);
  T minKept = std::abs(x[idx[0]]);
  for (auto i : idx) kept[i] = 1, minKept = std::min(minKept, std::abs(x[i]));
  std::size_t lastKeptAtMin = 0;
  for (auto i : idx)
    if (std::abs(x[i]) == minKept) lastKeptAtMin = i;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (kept[i]) continue;
    if (std::abs(x[i]) > minKept) return false;
    if (std::abs(x[i]) == minKept && i < lastKeptAtMin) return false;
  }
  return true;
}

TEST_CASE("selectTopK sampled path (large d) is exact - also on adversarial inputs") {
  Rng rng(12);
  std::vector<std::uint32_t> idx;
  const std::size_t d = 70001;  // above the direct-selection cut-off, not a multiple of the stride
  {  // full-sort reference once on each kind of random input
    for (bool ties : {false, true}) {
      const auto x = randomInput(rng, d, ties);
      gc::selectTopK(std::span<const float>(x), 700, idx);
      REQUIRE(idx == referenceTopK(x, 700));
    }
  }
  for (std::uint32_t k : {1u, 7u, 700u, 7000u, 35000u, 69999u}) {
    CAPTURE(k);
    std::vector<std::vector<float>> inputs{randomInput(rng, d, false), randomInput(rng, d, true)};
    // Large values on one residue class mod p: for some (p, r) a strided sample sees none of them, so the
    // first threshold is far too high and the retry path must recover.
    for (std::size_t period : {2u, 3u, 4u})
      for (std::size_t r = 0; r < 2; ++r) {
        std::vector<float> x(d, 0.5f);
        for (std::size_t i = r; i < d; i += period) x[i] = 100.0f + static_cast<float>(i % 7);
        inputs.push_back(std::move(x));
      }
    std::vector<float> sparse(d, 0.0f);  // mostly zeros: the threshold falls to 0
    for (std::size_t i = 0; i < 50; ++i) sparse[rng.below(d)] = -2.0f;
    inputs.push_back(std::move(sparse));
    for (const auto& x : inputs) {
      gc::selectTopK(std::span<const float>(x), k, idx);
      REQUIRE(isExactTopK(x, k, idx));
    }
    std::vector<double> xd(d);
    for (auto& v : xd) v = static_cast<double>(rng.below(5)) * (rng.below(2) ? 1.0 : -1.0);
    gc::selectTopK(std::span<const double>(xd), k, idx);
    REQUIRE(isExactTopK(xd, k, idx));
  }
}

TEST_CASE("the O(d) top-k checker itself rejects wrong answers") {
  const std::vector<float> x{3, -1, 3, 2, -3, 0};
  CHECK(isExactTopK(x, 2, {0, 2}));
  CHECK_FALSE(isExactTopK(x, 2, {0, 4}));  // tie at 3 must go to the lower index 2
  CHECK_FALSE(isExactTopK(x, 2, {0, 3}));  // 2 < 3
  CHECK_FALSE(isExactTopK(x, 2, {2, 0}));  // unsorted
  CHECK_FALSE(isExactTopK(x, 3, {0, 2}));  // wrong count
}

TEST_CASE("selectTopK double input and edge sizes") {
  std::vector<std::uint32_t> idx;
  std::vector<double> empty;
  gc::selectTopK(std::span<const double>(empty), 5, idx);
  CHECK(idx.empty());
  std::vector<double> one{-3.0};
  gc::selectTopK(std::span<const double>(one), 0, idx);
  CHECK(idx.empty());
  gc::selectTopK(std::span<const double>(one), 1, idx);
  CHECK(idx == std::vector<std::uint32_t>{0});
  gc::selectTopK(std::span<const double>(one), 9, idx);
  CHECK(idx == std::vector<std::uint32_t>{0});
  std::vector<double> flat(10, 1.0);
  flat[7] = -1.0;  // same magnitude: the lowest indices win
  gc::selectTopK(std::span<const double>(flat), 3, idx);
  CHECK(idx == std::vector<std::uint32_t>{0, 1, 2});
  std::vector<double> x{0.1, -5.0, 2.0, -2.0, 0.0, 5.0};
  gc::selectTopK(std::span<const double>(x), 3, idx);
  CHECK(idx == std::vector<std::uint32_t>{1, 2, 5});
  gc::selectTopK(std::span<const double>(x), 4, idx);
  CHECK(idx == std::vector<std::uint32_t>{1, 2, 3, 5});
}

TEST_CASE("index coding round-trips and picks the smaller of packed and bitmap") {
  Rng rng(13);
  std::vector<std::uint32_t> back;
  for (std::uint32_t dim : {0u, 1u, 2u, 3u, 64u, 65u, 1000u, 4097u}) {
    for (std::uint32_t k : {0u, 1u, 2u, dim / 40, dim / 10, dim / 2, dim}) {
      if (k > dim) continue;
      // Random k-subset via a partial shuffle, then sorted.
      std::vector<std::uint32_t> all(dim);
      std::iota(all.begin(), all.end(), 0u);
      for (std::uint32_t j = 0; j < k; ++j) std::swap(all[j], all[j + rng.below(dim - j)]);
      std::vector<std::uint32_t> idx(all.begin(), all.begin() + k);
      std::sort(idx.begin(), idx.end());

      const unsigned bits = dim <= 1 ? 1u : static_cast<unsigned>(std::ceil(std::log2(static_cast<double>(dim))));
      const std::size_t packed = ((std::size_t{k} * bits + 63) / 64) * 8;
      const std::size_t bitmap = ((std::size_t{dim} + 63) / 64) * 8;
      CHECK(gc::indexBytes(dim, k) == 1 + std::min(packed, bitmap));

      Bytes buf;
      ByteWriter w(buf);
      gc::writeIndices(idx, dim, w);
      REQUIRE(buf.size() == gc::indexBytes(dim, k));
      CHECK(static_cast<int>(buf[0]) == (bitmap < packed ? 1 : 0));
      ByteReader r(buf);
      gc::readIndices(r, dim, k, back);
      r.expectEnd();
      CHECK(back == idx);
    }
  }
}

TEST_CASE("readIndices rejects out-of-range - unordered - miscounted and truncated index sets") {
  std::vector<std::uint32_t> out;
  auto packedBuf = [](std::uint32_t dim, std::vector<std::uint32_t> raw) {
    const unsigned bits = gossip::bitsFor(dim - 1);
    Bytes b{std::byte{0}};
    b.resize(1 + gossip::packedBytes(raw.size(), bits));
    gossip::BitWriter bw(b.data() + 1);
    for (auto v : raw) bw.put(v, bits);
    bw.finish();
    return b;
  };
  auto expectBad = [&](const Bytes& b, std::uint32_t dim, std::uint32_t k) {
    ByteReader r(b);
    CHECK_THROWS_AS(gc::readIndices(r, dim, k, out), DecodeError);
  };
  expectBad(packedBuf(1000, {3, 999, 1000}), 1000, 3);  // index == dim
  expectBad(packedBuf(1000, {5, 5, 9}), 1000, 3);       // duplicate
  expectBad(packedBuf(1000, {9, 5, 10}), 1000, 3);      // decreasing
  expectBad(packedBuf(1000, {1, 2}), 1000, 5);          // truncated
  expectBad(packedBuf(1000, {1, 2}), 1, 2);             // k > dim

  // Bitmap form (dim 64, k 40: 8 bytes beat 40 * 6 bits).
  Bytes bm(9, std::byte{0});
  bm[0] = std::byte{1};
  for (int i = 0; i < 39; ++i) bm[1 + i / 8] |= std::byte{static_cast<unsigned char>(1u << (i % 8))};
  expectBad(bm, 64, 40);  // one bit short
  {
    ByteReader r(bm);
    CHECK_NOTHROW(gc::readIndices(r, 64, 39, out));  // the same 39 bits are a valid set for k = 39
  }
  Bytes wrongForm = bm;
  wrongForm[0] = std::byte{0};
  expectBad(wrongForm, 64, 40);
  // Bits beyond dim in the last word.
  Bytes tail(9, std::byte{0});
  tail[0] = std::byte{1};
  for (int i = 0; i < 36; ++i) tail[1 + i / 8] |= std::byte{static_cast<unsigned char>(1u << (i % 8))};
  tail[8] |= std::byte{0x80};  // bit 63 with dim 60
  expectBad(tail, 60, 37);
}

// ---------------------------------------------------------------- malformed payloads (topk, randk, cltk)

namespace {

// Decoding `bad` must throw DecodeError and leave the accumulator bit-identical.
void expectRejected(const gc::Compressor& c, const Bytes& bad, std::size_t dim, const char* what) {
  CAPTURE(what);
  std::vector<float> acc(dim);
  for (std::size_t i = 0; i < dim; ++i) acc[i] = 0.25f * static_cast<float>(i);
  const auto before = acc;
  CHECK_THROWS_AS(c.decodeAdd(bad, std::span<float>(acc), 1.0), DecodeError);
  CHECK(acc == before);
}

void setF32(Bytes& b, std::size_t at, float v) { std::memcpy(b.data() + at, &v, 4); }

// Malformations common to every sparse payload; `valuesAt` is the offset of the first f32 value.
void commonMalformations(const gc::Compressor& c, const Bytes& good, std::uint32_t dim, std::size_t valuesAt) {
  {  // sanity: the good payload decodes
    std::vector<float> acc(dim, 0.f);
    REQUIRE_NOTHROW(c.decodeAdd(good, std::span<float>(acc), 1.0));
  }
  for (std::size_t len = 0; len < good.size(); ++len)
    expectRejected(c, Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len)), dim, "truncated");
  Bytes longer = good;
  longer.push_back(std::byte{0});
  expectRejected(c, longer, dim, "trailing byte");
  Bytes b = good;
  b[0] = std::byte{static_cast<unsigned char>(gc::CodecId::Fp32)};
  expectRejected(c, b, dim, "codec");
  b = good;
  b[1] = std::byte{99};
  expectRejected(c, b, dim, "version");
  b = good;
  b[2] = std::byte{7};
  expectRejected(c, b, dim, "param");
  b = good;
  std::uint32_t wrongDim = dim + 1;
  std::memcpy(b.data() + 4, &wrongDim, 4);
  expectRejected(c, b, dim, "header dim");
  expectRejected(c, good, dim + 1, "accumulator dim");
  b = good;
  setF32(b, valuesAt, std::numeric_limits<float>::quiet_NaN());
  expectRejected(c, b, dim, "NaN value");
  b = good;
  setF32(b, b.size() - 4, std::numeric_limits<float>::infinity());
  expectRejected(c, b, dim, "Inf value");
}

std::vector<float> smallInput(std::uint32_t dim) {
  Rng rng(21);
  std::vector<float> x(dim);
  for (auto& v : x) v = static_cast<float>(rng.normal());
  return x;
}

}  // namespace

TEST_CASE("topk rejects malformed payloads without touching acc") {
  gc::CompressorSpec spec;
  spec.name = "topk";
  spec.k = 5;
  auto c = gc::makeCompressor(spec);
  const std::uint32_t dim = 300;  // 5 indices of 9 bits: packed form
  const auto x = smallInput(dim);
  Rng rng(1);
  gc::Encoded e;
  c->encode(std::span<const float>(x), rng, e);
  const std::size_t valuesAt = 8 + 4 + gc::indexBytes(dim, 5);
  commonMalformations(*c, e.bytes, dim, valuesAt);
  Bytes b = e.bytes;
  const std::uint32_t otherK = 4;
  std::memcpy(b.data() + 8, &otherK, 4);
  expectRejected(*c, b, dim, "k");
  b = e.bytes;
  b[12] = std::byte{1};  // bitmap flag where packed is canonical
  expectRejected(*c, b, dim, "index form");
  b = e.bytes;
  b[13] = std::byte{0xFF};  // first index -> 511 >= dim (low 8 bits set, so also out of order)
  b[14] |= std::byte{1};
  expectRejected(*c, b, dim, "index out of range");
  // Index equal to its successor: rewrite index 1 as index 0's value.
  b = e.bytes;
  {
    std::uint64_t w;
    std::memcpy(&w, b.data() + 13, 8);
    const std::uint64_t i0 = w & 0x1FF;
    w = (w & ~(0x1FFull << 9)) | (i0 << 9);
    std::memcpy(b.data() + 13, &w, 8);
  }
  expectRejected(*c, b, dim, "duplicate index");
}

TEST_CASE("randk rejects malformed payloads without touching acc") {
  for (bool unbiased : {false, true}) {
    gc::CompressorSpec spec;
    spec.name = "randk";
    spec.k = 6;
    spec.unbiased = unbiased;
    auto c = gc::makeCompressor(spec);
    const auto x = smallInput(50);
    Rng rng(2);
    gc::Encoded e;
    c->encode(std::span<const float>(x), rng, e);
    commonMalformations(*c, e.bytes, 50, 16);
    Bytes b = e.bytes;
    b[2] = unbiased ? std::byte{0} : std::byte{1};  // the other scaling
    expectRejected(*c, b, 50, "unbiased flag");
  }
}

TEST_CASE("cltk rejects malformed payloads and supports that differ from the local one") {
  gc::CompressorSpec spec;
  spec.name = "cltk";
  spec.k = 4;
  auto sender = gc::makeCompressor(spec);
  auto receiver = gc::makeCompressor(spec);
  const std::uint32_t dim = 40;
  const auto x = smallInput(dim);
  const gc::SharedSupport s({1, 5, 9, 30}, dim);
  gc::cltkControl(*sender)->setSupport(s);
  gc::cltkControl(*receiver)->setSupport(s);
  Rng rng(3);
  gc::Encoded e;
  sender->encode(std::span<const float>(x), rng, e);
  commonMalformations(*receiver, e.bytes, dim, 16);

  // Same size, different set: only the fingerprint tells them apart.
  gc::cltkControl(*receiver)->setSupport(gc::SharedSupport({1, 5, 9, 31}, dim));
  expectRejected(*receiver, e.bytes, dim, "different support");
  gc::cltkControl(*receiver)->setSupport(gc::SharedSupport({1, 5, 9}, dim));
  expectRejected(*receiver, e.bytes, dim, "smaller support");
  gc::cltkControl(*receiver)->setSupport(gc::SharedSupport{});
  expectRejected(*receiver, e.bytes, dim, "no support yet");
  gc::cltkControl(*receiver)->setSupport(s);
  Bytes b = e.bytes;
  b[12] ^= std::byte{1};
  expectRejected(*receiver, b, dim, "fingerprint bit flip");
}

namespace {

// addAndSelectTopK against its definition: the sums one by one, then selectTopK of them.
template <class T>
void checkAddAndSelect(const std::vector<T>& m0, const std::vector<T>& x, std::uint32_t k) {
  std::vector<T> want = m0;
  for (std::size_t i = 0; i < x.size(); ++i) want[i] += x[i];
  std::vector<std::uint32_t> wantIdx, idx;
  gc::selectTopK(std::span<const T>(want), k, wantIdx);
  std::vector<T> m = m0;
  REQUIRE(gc::addAndSelectTopK(std::span<T>(m), std::span<const T>(x), k, idx));
  CHECK(idx == wantIdx);
  CHECK(std::memcmp(m.data(), want.data(), m.size() * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("addAndSelectTopK is m += x and then selectTopK(m): the same sums bit for bit and the same indices") {
  Rng rng(31);
  // Below and above the direct-selection cut-off (16,384), a length that is no multiple of the 32-value
  // block, and the trivial k (0, d).
  for (const std::size_t d : {std::size_t{1}, std::size_t{45}, std::size_t{5000}, std::size_t{70001}}) {
    for (const std::uint32_t k : {0u, 1u, 7u, 700u, 35000u, 70001u}) {
      CAPTURE(d);
      CAPTURE(k);
      for (const bool ties : {false, true}) {
        const auto m0 = randomInput(rng, d, ties), x = randomInput(rng, d, ties);
        checkAddAndSelect(m0, x, k);
        // x = -m0 on a residue class: sums of exactly zero among large ones, and the sample's threshold
        // too high for some strides (the retry path after the fused first pass).
        auto cancel = x;
        for (std::size_t i = 0; i < d; i += 3) cancel[i] = -m0[i];
        checkAddAndSelect(m0, cancel, k);
      }
      std::vector<double> md(d), xd(d);
      for (std::size_t i = 0; i < d; ++i) {
        md[i] = static_cast<double>(rng.below(5)) - 2.0;
        xd[i] = rng.normal();
      }
      checkAddAndSelect(md, xd, k);
    }
  }
}

TEST_CASE("addAndSelectTopK refuses a NaN or an infinity anywhere in x") {
  Rng rng(32);
  for (const std::size_t d : {std::size_t{45}, std::size_t{70001}}) {
    for (const std::uint32_t k : {3u, 45u}) {
      // The first value, one inside a 32-value block, the last of the blocks and the tail's last.
      for (const std::size_t at : {std::size_t{0}, std::size_t{17}, d / 32 * 32 - 1, d - 1}) {
        for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity()}) {
          CAPTURE(d);
          CAPTURE(k);
          CAPTURE(at);
          CAPTURE(bad);
          auto m = randomInput(rng, d, false);
          auto x = randomInput(rng, d, false);
          x[at] = bad;
          std::vector<std::uint32_t> idx;
          CHECK_FALSE(gc::addAndSelectTopK(std::span<float>(m), std::span<const float>(x), k, idx));
          std::vector<double> md(d, 1.0), xd(d, 0.5);
          xd[at] = static_cast<double>(bad);
          CHECK_FALSE(gc::addAndSelectTopK(std::span<double>(md), std::span<const double>(xd), k, idx));
        }
      }
    }
  }
}

TEST_CASE("encodeWithFeedback: top-k's fused round and the default both give encode(m + x) and m + x minus its decode") {
  Rng rng(33);
  for (const char* name : {"topk", "fp16", "randk"}) {
    const auto c = gc::makeCompressor({.name = name, .ratio = 0.01});
    for (const std::size_t d : {std::size_t{300}, std::size_t{70001}}) {
      CAPTURE(name);
      CAPTURE(d);
      auto m0 = randomInput(rng, d, false), x = randomInput(rng, d, false);
      x[d / 3] = -m0[d / 3];  // a sum of exactly zero
      m0[d / 4] = -0.0f;
      x[d / 4] = 1e4f;        // kept by top-k, from a negative zero
      std::vector<float> want = m0;
      for (std::size_t i = 0; i < d; ++i) want[i] += x[i];
      gc::Encoded expect, got;
      Rng r1(5), r2(5);
      c->encode(std::span<const float>(want), r1, expect);
      c->decodeAdd(expect.view(), std::span<float>(want), -1.0);
      std::vector<float> m = m0;
      REQUIRE(c->encodeWithFeedback(std::span<float>(m), std::span<const float>(x), r2, got));
      CHECK(got.bytes == expect.bytes);
      CHECK(std::memcmp(m.data(), want.data(), d * sizeof(float)) == 0);  // +0 and -0 told apart
      std::vector<double> md(m0.begin(), m0.end()), xd(d), wantd = md;
      for (std::size_t i = 0; i < d; ++i) wantd[i] += (xd[i] = rng.normal() * 1e-3 + 1.0 / 3.0);
      gc::Encoded expectd, gotd;
      Rng r3(6), r4(6);
      c->encode(std::span<const double>(wantd), r3, expectd);
      c->decodeAdd(expectd.view(), std::span<double>(wantd), -1.0);
      REQUIRE(c->encodeWithFeedback(std::span<double>(md), std::span<const double>(xd), r4, gotd));
      CHECK(gotd.bytes == expectd.bytes);
      CHECK(std::memcmp(md.data(), wantd.data(), d * sizeof(double)) == 0);  // double: the rounding error kept
      auto bad = x;
      bad[d / 2] = std::numeric_limits<float>::quiet_NaN();
      CHECK_FALSE(c->encodeWithFeedback(std::span<float>(m), std::span<const float>(bad), r2, got));
    }
  }
}

TEST_CASE("encodeWithFeedback refuses a sum beyond float32's range where the frame would carry an infinity") {
  // x finite, m + x not a float32: the fused top-k round throws DecodeError, as decodeAdd(-1) of a frame
  // holding an infinity did before it, and so does the default round of the other codecs.
  for (const std::string name : {"topk", "randk", "fp16"}) {
    CAPTURE(name);
    const auto c = gc::makeCompressor({.name = name, .ratio = 0.5});
    for (const std::size_t d : {std::size_t{40}, std::size_t{40001}}) {
      CAPTURE(d);
      std::vector<float> m(d, 1.0f), x(d, 0.5f);
      for (std::size_t i = 0; i < d; i += 2) m[i] = 3e38f, x[i] = 2e38f;  // float sum: +inf
      gc::Encoded out;
      Rng rng(1);
      CHECK_THROWS_AS(c->encodeWithFeedback(std::span<float>(m), std::span<const float>(x), rng, out), DecodeError);
      if (name == "fp16") continue;  // fp16 saturates a finite double beyond its range (compressors/half.h)
      std::vector<double> md(d, 1.0), xd(d, 0.5);
      for (std::size_t i = 0; i < d; i += 2) md[i] = 3e38, xd[i] = 2e38;  // a double, beyond float's range
      CHECK_THROWS_AS(c->encodeWithFeedback(std::span<double>(md), std::span<const double>(xd), rng, out), DecodeError);
    }
  }
}
