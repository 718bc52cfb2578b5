// The lgc codec (compressors/lgc.h): top-k until a basis is installed; then m f32 codes per block of b and
// the top-k of what they leave. Checked against a direct computation: the codes are B^T x_blk in f32, the
// decoded vector is B c plus the residual's top-k, the top-k contraction bound holds, and a receiver
// without the same basis refuses the payload with its accumulator unchanged.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/lgc.h"
#include "compressors/select.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/rng.h"

namespace gc = gossip::compress;
using gossip::ByteReader;
using gossip::Bytes;
using gossip::ByteWriter;
using gossip::DecodeError;
using gossip::Rng;

namespace {

constexpr std::uint32_t kBlock = 16, kCodes = 3;

std::unique_ptr<gc::Compressor> lgc(std::uint32_t k = 5) {
  gc::CompressorSpec s;
  s.name = "lgc";
  s.k = k;
  s.block = kBlock;
  s.codes = kCodes;
  return gc::makeCompressor(s);
}

// A b x m basis with orthonormal columns (Gram-Schmidt on normals).
gc::LgcBasis randomBasis(std::uint64_t seed, std::uint32_t b = kBlock, std::uint32_t m = kCodes) {
  Rng rng(seed);
  std::vector<double> q(std::size_t{b} * m);
  for (std::uint32_t j = 0; j < m; ++j) {
    double* col = q.data() + std::size_t{j} * b;
    for (std::uint32_t i = 0; i < b; ++i) col[i] = rng.normal();
    for (std::uint32_t l = 0; l < j; ++l) {
      const double* prev = q.data() + std::size_t{l} * b;
      double dot = 0;
      for (std::uint32_t i = 0; i < b; ++i) dot += col[i] * prev[i];
      for (std::uint32_t i = 0; i < b; ++i) col[i] -= dot * prev[i];
    }
    double n = 0;
    for (std::uint32_t i = 0; i < b; ++i) n += col[i] * col[i];
    for (std::uint32_t i = 0; i < b; ++i) col[i] /= std::sqrt(n);
  }
  return gc::LgcBasis(b, m, std::vector<float>(q.begin(), q.end()));
}

std::vector<double> normals(Rng& rng, std::size_t d) {
  std::vector<double> x(d);
  for (auto& v : x) v = rng.normal();
  return x;
}

}  // namespace

TEST_CASE("lgc without a basis is top-k byte for byte and decodes top-k payloads") {
  auto c = lgc();
  gc::CompressorSpec ts;
  ts.name = "topk";
  ts.k = 5;
  auto topk = gc::makeCompressor(ts);
  Rng rng(1), r1(2), r2(2);
  const auto x = normals(rng, 70);
  gc::Encoded a, b;
  c->encode(std::span<const double>(x), r1, a);
  topk->encode(std::span<const double>(x), r2, b);
  CHECK(a.bytes == b.bytes);
  CHECK(c->encodedBytes(70) == topk->encodedBytes(70));
  CHECK(c->quality(70).value == topk->quality(70).value);
  // With a basis installed it still decodes a top-k payload (a neighbour without the basis).
  gc::lgcControl(*c)->setBasis(randomBasis(3));
  std::vector<double> y1(70, 0.0), y2(70, 0.0);
  c->decodeAdd(b.view(), std::span<double>(y1), 2.0);
  topk->decodeAdd(b.view(), std::span<double>(y2), 2.0);
  CHECK(y1 == y2);
}

TEST_CASE("lgc with a basis: codes are B^T x per block in f32 - the rest goes by top-k - and the bound holds") {
  auto c = lgc();
  auto* ctl = gc::lgcControl(*c);
  REQUIRE(ctl != nullptr);
  CHECK(gc::lgcControl(*gc::makeCompressor({.name = "topk"})) == nullptr);
  const auto basis = randomBasis(4);
  ctl->setBasis(basis);
  const auto B = basis.cols();
  Rng rng(5);
  for (std::uint32_t d : {10u, 16u, 70u, 160u}) {
    CAPTURE(d);
    const std::uint32_t blocks = d / kBlock;
    const auto x = normals(rng, d);
    gc::Encoded e;
    Rng r(6);
    c->encode(std::span<const double>(x), r, e);
    CHECK(e.size() == c->encodedBytes(d));
    CHECK(e.size() == 8 + 8 + 4 * blocks * kCodes + (8 + 4 + gc::indexBytes(d, 5) + 4 * 5));
    // The direct computation: codes, the reconstruction, the residual and its top-5.
    std::vector<double> want(d, 0.0), residual(x);
    for (std::uint32_t k = 0; k < blocks; ++k)
      for (std::uint32_t j = 0; j < kCodes; ++j) {
        double dot = 0;
        for (std::uint32_t i = 0; i < kBlock; ++i) dot += double(B[j * kBlock + i]) * x[k * kBlock + i];
        float sent;
        std::memcpy(&sent, e.bytes.data() + 16 + 4 * (k * kCodes + j), 4);
        // The codec sums in its own order (a matrix product): equal up to the last f32 bit.
        CHECK(sent == doctest::Approx(static_cast<float>(dot)).epsilon(1e-6));
        for (std::uint32_t i = 0; i < kBlock; ++i) {
          want[k * kBlock + i] += double(sent) * double(B[j * kBlock + i]);
          residual[k * kBlock + i] -= double(sent) * double(B[j * kBlock + i]);
        }
      }
    std::vector<std::uint32_t> idx;
    gc::selectTopK(std::span<const double>(residual), 5, idx);
    for (auto i : idx) want[i] += double(static_cast<float>(residual[i]));
    std::vector<double> got(d, 0.0);
    c->decodeAdd(e.view(), std::span<double>(got), 1.0);
    double err = 0, norm = 0;
    for (std::uint32_t i = 0; i < d; ++i) {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
      err += (got[i] - x[i]) * (got[i] - x[i]);
      norm += x[i] * x[i];
    }
    CHECK(err <= (1.0 - 5.0 / d) * norm);
  }
}

TEST_CASE("lgc: a vector in the basis' span is sent by its codes - the residual's top-k only mops up f32 rounding") {
  auto c = lgc(1);
  const auto basis = randomBasis(7);
  gc::lgcControl(*c)->setBasis(basis);
  std::vector<double> x(64, 0.0);
  Rng rng(8);
  for (std::uint32_t k = 0; k < 4; ++k)
    for (std::uint32_t j = 0; j < kCodes; ++j) {
      const double a = rng.normal();
      for (std::uint32_t i = 0; i < kBlock; ++i) x[k * kBlock + i] += a * double(basis.cols()[j * kBlock + i]);
    }
  gc::Encoded e;
  c->encode(std::span<const double>(x), rng, e);
  std::vector<double> got(64, 0.0);
  c->decodeAdd(e.view(), std::span<double>(got), 1.0);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < 64; ++i) err += (got[i] - x[i]) * (got[i] - x[i]), norm += x[i] * x[i];
  CHECK(err <= 1e-12 * norm);  // 12 codes carry what top-1 alone could not
}

TEST_CASE("lgc: a receiver without the sender's basis refuses its payload and keeps its accumulator") {
  auto sender = lgc(), none = lgc(), other = lgc();
  gc::lgcControl(*sender)->setBasis(randomBasis(9));
  gc::lgcControl(*other)->setBasis(randomBasis(10));
  Rng rng(11);
  const auto x = normals(rng, 50);
  gc::Encoded e;
  sender->encode(std::span<const double>(x), rng, e);
  for (auto* c : {none.get(), other.get()}) {
    std::vector<float> acc(50, 1.5f);
    CHECK_THROWS_AS(c->decodeAdd(e.view(), std::span<float>(acc), 1.0), DecodeError);
    for (float v : acc) CHECK(v == 1.5f);
  }
  gc::lgcControl(*other)->setBasis(randomBasis(9));
  std::vector<float> acc(50, 0.0f);
  CHECK_NOTHROW(other->decodeAdd(e.view(), std::span<float>(acc), 1.0));
}

TEST_CASE("lgc basis: round trip - and corruption or other sizes are refused") {
  const auto s = randomBasis(12);
  Bytes buf;
  ByteWriter w(buf);
  gc::writeBasis(s, w);
  CHECK(buf.size() == gc::basisBytes(kBlock, kCodes));
  {
    ByteReader r(buf);
    CHECK(gc::readBasis(r, kBlock, kCodes) == s);
    r.expectEnd();
  }
  {
    ByteReader r(buf);
    CHECK_THROWS_AS(gc::readBasis(r, kBlock, kCodes + 1), DecodeError);
  }
  auto bad = buf;
  bad[20] ^= std::byte{1};  // a value changed: the fingerprint no longer matches
  ByteReader r(bad);
  CHECK_THROWS_AS(gc::readBasis(r, kBlock, kCodes), DecodeError);
  auto nan = buf;
  const float q = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(nan.data() + 12, &q, 4);
  ByteReader rn(nan);
  CHECK_THROWS_AS(gc::readBasis(rn, kBlock, kCodes), DecodeError);
}

TEST_CASE("lgc refuses a missing block or a code longer than the block") {
  gc::CompressorSpec s;
  s.name = "lgc";
  CHECK_THROWS_AS(gc::makeCompressor(s), gossip::ConfigError);
  s.block = 8;
  s.codes = 9;
  CHECK_THROWS_AS(gc::makeCompressor(s), gossip::ConfigError);
  s.codes = 8;
  CHECK_NOTHROW(gc::makeCompressor(s));
}
