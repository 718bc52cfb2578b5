// The Compressor contract (compressors/compressor.h), swept over every name in compressorNames():
// float and double round trips, size == encodedBytes(), same seed -> same bytes, and rejection of
// malformed payloads (every truncation, a trailing byte, wrong codec/version, wrong dimension,
// non-finite floats) with DecodeError and the accumulator left untouched.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/lgc.h"
#include "compressors/select.h"
#include "compressors/shared_support.h"
#include "core/error.h"
#include "core/rng.h"

namespace gc = gossip::compress;
using gossip::DecodeError;
using gossip::Rng;

namespace {

constexpr double kRatio = 0.05;

gc::CompressorSpec specFor(std::string_view name) {
  gc::CompressorSpec s;
  s.name = std::string(name);
  s.ratio = kRatio;
  if (name == "sign" || name == "qsgd" || name == "lead" || name == "dither") s.block = 64;  // several blocks
  if (name == "lgc") s.block = 16, s.codes = 3;
  return s;
}

// nullptr (with a MESSAGE) if the factory reports the codec as not implemented yet.
std::unique_ptr<gc::Compressor> make(std::string_view name) {
  try {
    return gc::makeCompressor(specFor(name));
  } catch (const gossip::Error& e) {
    if (std::string(e.what()).find("not implemented") == std::string::npos) throw;
    MESSAGE("skipping ", name, ": ", e.what());
    return nullptr;
  }
}

std::vector<double> input(std::size_t d, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> x(d);
  for (auto& v : x) v = static_cast<float>(rng.normal() * std::exp(rng.normal()));
  return x;
}

// CLT-k encodes only on an agreed support: install the top-k of x, as the round's leader would. LGC codes
// with a basis once one is installed: the first 16 x 3 entries of a normal vector, made orthonormal.
void prepare(gc::Compressor& c, const std::vector<double>& x) {
  if (auto* ctl = gc::cltkControl(c)) {
    const auto d = static_cast<std::uint32_t>(x.size());
    ctl->setSupport(gc::chooseSupport(std::span<const double>(x), ctl->supportSize(d)));
  }
  if (auto* ctl = gc::lgcControl(c)) {
    const std::uint32_t b = ctl->block(), m = ctl->codes();
    Rng rng(77);
    std::vector<double> q(std::size_t{b} * m);
    for (std::uint32_t j = 0; j < m; ++j) {
      double* col = q.data() + std::size_t{j} * b;
      for (std::uint32_t i = 0; i < b; ++i) col[i] = rng.normal();
      for (std::uint32_t l = 0; l < j; ++l) {
        double dot = 0;
        for (std::uint32_t i = 0; i < b; ++i) dot += col[i] * q[std::size_t{l} * b + i];
        for (std::uint32_t i = 0; i < b; ++i) col[i] -= dot * q[std::size_t{l} * b + i];
      }
      double n = 0;
      for (std::uint32_t i = 0; i < b; ++i) n += col[i] * col[i];
      for (std::uint32_t i = 0; i < b; ++i) col[i] /= std::sqrt(n);
    }
    ctl->setBasis(gc::LgcBasis(b, m, std::vector<float>(q.begin(), q.end())));
  }
}

template <class T>
gc::Encoded encode(const gc::Compressor& c, const std::vector<double>& x, std::uint64_t seed) {
  const std::vector<T> xt(x.begin(), x.end());
  Rng rng(seed);
  gc::Encoded e;
  c.encode(std::span<const T>(xt), rng, e);
  return e;
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Decodes p into a copy of acc; true if it threw DecodeError and left the copy bit-identical.
bool sparse(const gc::Compressor& c) {
  return c.codec() == gc::CodecId::TopK || c.codec() == gc::CodecId::RandK || c.codec() == gc::CodecId::TopKQuant;
}

// Whether sparseSupport refuses p as decodeAdd does (sparse codecs), or declines without reading (the others).
bool supportRefuses(const gc::Compressor& c, std::span<const std::byte> p, std::size_t dim) {
  std::vector<std::uint32_t> idx;
  try {
    return !c.sparseSupport(p, static_cast<std::uint32_t>(dim), idx) && !sparse(c) && idx.empty();
  } catch (const DecodeError&) {
    return sparse(c) && idx.empty();
  }
}

template <class T>
bool rejected(const gc::Compressor& c, std::span<const std::byte> p, const std::vector<T>& acc) {
  auto work = acc;
  try {
    c.decodeAdd(p, std::span<T>(work), 1.0);
  } catch (const DecodeError&) {
    return sameBits(work, acc) && supportRefuses(c, p, acc.size());
  }
  return false;
}

// Offset of the first floating-point value a payload of this codec carries, and how to spoil it; nullopt
// if the payload has none (empty vector).
struct FloatSlot {
  std::size_t offset;
  enum Kind { F32, F16, Bf16, NatExponent } kind;
};
std::optional<FloatSlot> firstFloat(std::string_view name, std::uint32_t d) {
  if (d == 0) return std::nullopt;
  const auto k = static_cast<std::uint32_t>(std::min<double>(d, std::max(1.0, std::round(kRatio * d))));
  if (name == "fp16") return FloatSlot{8, FloatSlot::F16};
  if (name == "bf16") return FloatSlot{8, FloatSlot::Bf16};
  if (name == "natural") return FloatSlot{8, FloatSlot::NatExponent};
  if (name == "topk_natural") return FloatSlot{12 + gc::indexBytes(d, k), FloatSlot::NatExponent};
  if (name == "topk" || name == "topk_dither") return FloatSlot{12 + gc::indexBytes(d, k), FloatSlot::F32};
  if (name == "randk" || name == "cltk") return FloatSlot{16, FloatSlot::F32};
  if (name == "lgc") return d >= 16 ? FloatSlot{16, FloatSlot::F32} : FloatSlot{16 + 12 + gc::indexBytes(d, k), FloatSlot::F32};
  return FloatSlot{8, FloatSlot::F32};  // fp32/identity values, block codecs' first scale
}

std::vector<std::vector<std::byte>> spoiled(const gc::Encoded& e, FloatSlot slot) {
  std::vector<std::vector<std::byte>> out;
  auto put = [&](auto v) {
    auto p = e.bytes;
    std::memcpy(p.data() + slot.offset, &v, sizeof v);
    out.push_back(std::move(p));
  };
  const float inf = std::numeric_limits<float>::infinity();
  switch (slot.kind) {
    case FloatSlot::F32: put(inf), put(-inf), put(std::numeric_limits<float>::quiet_NaN()); break;
    case FloatSlot::F16: put(std::uint16_t{0x7C00}), put(std::uint16_t{0xFC00}), put(std::uint16_t{0x7E00}); break;
    case FloatSlot::Bf16: put(std::uint16_t{0x7F80}), put(std::uint16_t{0xFF80}), put(std::uint16_t{0x7FC0}); break;
    case FloatSlot::NatExponent: put(std::uint8_t{0xFF}); break;  // exponent code 255 = inf/NaN
  }
  return out;
}

template <class T>
void checkRoundTrip(const gc::Compressor& c, const std::vector<double>& x) {
  const auto d = static_cast<std::uint32_t>(x.size());
  const auto e = encode<T>(c, x, 7);
  CHECK(e.size() == c.encodedBytes(d));
  CHECK(encode<T>(c, x, 7).bytes == e.bytes);
  std::vector<T> acc(d, T(0));
  c.decodeAdd(e.view(), std::span<T>(acc), 1.0);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < d; ++i) {
    REQUIRE(std::isfinite(acc[i]));
    err += (acc[i] - x[i]) * (acc[i] - x[i]);
    norm += x[i] * x[i];
  }
  CHECK(err <= 10 * norm);  // loose: the per-codec bounds are in test_quantizers.cc / test_sparse_codecs.cc
  if (c.codec() == gc::CodecId::Fp32) CHECK(err == 0);
  // A sparse codec's support holds every index the payload decodes to nonzero at, and no other entry of acc
  // may have changed (the in-place mix of algorithms/stateless.cc relies on it).
  std::vector<std::uint32_t> idx;
  CHECK(c.sparseSupport(e.view(), d, idx) == sparse(c));
  CHECK(c.sparse() == sparse(c));  // what the memory estimate asks without a payload
  std::vector<bool> in(d, false);
  for (std::uint32_t i : idx) {
    REQUIRE(i < d);
    in[i] = true;
  }
  if (sparse(c)) {
    CHECK(idx.size() <= d);
    for (std::size_t i = 0; i < d; ++i)
      if (acc[i] != T(0)) CHECK(in[i]);
  }
}

template <class T>
void checkMalformed(const gc::Compressor& c, std::string_view name, const std::vector<double>& x) {
  const auto d = static_cast<std::uint32_t>(x.size());
  const auto e = encode<T>(c, x, 3);
  const auto before = [&] {
    const auto v = input(d, 99);
    return std::vector<T>(v.begin(), v.end());
  }();
  const std::span<const std::byte> p = e.view();
  for (std::size_t len = 0; len < p.size(); ++len) {
    CAPTURE(len);
    CHECK(rejected(c, p.first(len), before));
  }
  auto longer = e.bytes;
  longer.push_back(std::byte{0});
  CHECK(rejected(c, longer, before));
  for (int codec : {0, 255, static_cast<int>(c.codec()) % 12 + 1}) {
    auto q = e.bytes;
    q[0] = static_cast<std::byte>(codec);
    CHECK(rejected(c, q, before));
  }
  for (int version : {0, gc::kCodecVersion + 1, 255}) {
    auto q = e.bytes;
    q[1] = static_cast<std::byte>(version);
    CHECK(rejected(c, q, before));
  }
  auto bigger = before;
  bigger.push_back(T(1));
  CHECK(rejected(c, p, bigger));
  if (d > 0) CHECK(rejected(c, p, std::vector<T>(before.begin(), before.end() - 1)));
  if (const auto slot = firstFloat(name, d))
    for (const auto& q : spoiled(e, *slot)) CHECK(rejected(c, q, before));
  // Wherever a NaN or inf lands, the decoder either rejects the payload or adds only finite values.
  for (std::uint32_t bits : {0x7FC00000u, 0x7F800000u}) {
    for (std::size_t off = 8; off + 4 <= p.size(); ++off) {
      auto q = e.bytes;
      std::memcpy(q.data() + off, &bits, 4);
      auto acc = before;
      try {
        c.decodeAdd(q, std::span<T>(acc), 1.0);
        for (T v : acc) REQUIRE(std::isfinite(v));
      } catch (const DecodeError&) {
        REQUIRE(sameBits(acc, before));
      }
    }
  }
}

}  // namespace

TEST_CASE("every compressor: round trip in float and double - exact size - same seed -> same bytes") {
  for (auto name : gc::compressorNames()) {
    CAPTURE(name);
    const auto c = make(name);
    if (!c) continue;
    for (std::uint32_t d : {0u, 1u, 5u, 63u, 64u, 65u, 300u}) {
      CAPTURE(d);
      const auto x = input(d, d + 1);
      prepare(*c, x);
      checkRoundTrip<float>(*c, x);
      checkRoundTrip<double>(*c, x);
    }
  }
}

TEST_CASE("every compressor rejects malformed payloads and leaves the accumulator unchanged") {
  for (auto name : gc::compressorNames()) {
    CAPTURE(name);
    const auto c = make(name);
    if (!c) continue;
    for (std::uint32_t d : {0u, 1u, 70u, 300u}) {
      CAPTURE(d);
      const auto x = input(d, 5 * d + 2);
      prepare(*c, x);
      checkMalformed<float>(*c, name, x);
      checkMalformed<double>(*c, name, x);
    }
  }
}
