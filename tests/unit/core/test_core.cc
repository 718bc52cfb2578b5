#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "core/bitpack.h"
#include "core/bytes.h"
#include "core/rng.h"

using namespace gossip;

TEST_CASE("rng is deterministic per seed and splits differ") {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) CHECK(a.next() == b.next());
  CHECK(Rng(42).next() != c.next());
  Rng d(7);
  Rng e = d.split();
  CHECK(d.next() != e.next());
}

TEST_CASE("rng below is in range and roughly uniform") {
  Rng r(1);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    auto v = r.below(7);
    REQUIRE(v < 7);
    counts[v]++;
  }
  for (int c : counts) CHECK(std::abs(c - 10000) < 500);
}

TEST_CASE("bit packing round-trips every width") {
  Rng r(3);
  for (unsigned bits = 1; bits <= 57; ++bits) {
    for (std::size_t n : {0u, 1u, 2u, 63u, 64u, 65u, 1000u}) {
      std::vector<std::uint64_t> v(n);
      for (auto& x : v) x = r.next() & ((1ull << bits) - 1);
      std::vector<std::byte> buf(packedBytes(n, bits));
      BitWriter w(buf.data());
      for (auto x : v) w.put(x, bits);
      w.finish();
      BitReader rd(buf.data());
      for (std::size_t i = 0; i < n; ++i) REQUIRE(rd.get(bits) == v[i]);
    }
  }
}

TEST_CASE("byte reader rejects truncated and trailing input") {
  Bytes b;
  ByteWriter w(b);
  w.put<std::uint32_t>(7);
  w.put<float>(1.5f);
  ByteReader r(b);
  CHECK(r.get<std::uint32_t>() == 7);
  CHECK(r.get<float>() == 1.5f);
  r.expectEnd();
  ByteReader r2(std::span<const std::byte>(b).first(6));
  CHECK(r2.get<std::uint32_t>() == 7);
  CHECK_THROWS_AS(r2.get<float>(), DecodeError);
  ByteReader r3(b);
  r3.get<std::uint32_t>();
  CHECK_THROWS_AS(r3.expectEnd(), DecodeError);
}

TEST_CASE("deriveSeed separates its inputs") {
  std::set<std::uint64_t> seen;
  for (std::uint64_t a = 0; a < 10; ++a)
    for (std::uint64_t b = 0; b < 10; ++b) seen.insert(deriveSeed({1, a, b}));
  CHECK(seen.size() == 100);
}
