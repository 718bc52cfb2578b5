// CRC-32C: the standard check value, chaining, and agreement of the hardware and table paths on buffers
// of every small length and alignment (the two loops split a buffer into 8-byte words and a tail).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/crc32c.h"
#include "core/rng.h"

using namespace gossip;

namespace {
std::span<const std::byte> asBytes(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }
}  // namespace

TEST_CASE("crc32c check values") {
  CHECK(crc32c(asBytes("123456789")) == 0xE3069283u);
  CHECK(crc32cUpdateSoftware(0, asBytes("123456789")) == 0xE3069283u);
  CHECK(crc32c({}) == 0u);
  // RFC 3720 B.4: 32 bytes of zeros.
  const std::vector<std::byte> zeros(32, std::byte{0});
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  const std::vector<std::byte> ones(32, std::byte{0xFF});
  CHECK(crc32c(ones) == 0x62A8AB43u);
}

TEST_CASE("crc32c chains over any split") {
  Rng rng(5);
  std::vector<std::byte> buf(300);
  for (auto& b : buf) b = std::byte(rng.below(256));
  const std::uint32_t whole = crc32c(buf);
  for (std::size_t cut = 0; cut <= buf.size(); ++cut) {
    const std::span<const std::byte> s(buf);
    CHECK(crc32cUpdate(crc32c(s.first(cut)), s.subspan(cut)) == whole);
    CHECK(crc32cUpdateSoftware(crc32cUpdateSoftware(0, s.first(cut)), s.subspan(cut)) == whole);
  }
}

TEST_CASE("crc32c hardware path equals the table path") {
  MESSAGE("hardware crc32c: " << (crc32cHardwareAvailable() ? "yes" : "no"));
  Rng rng(11);
  std::vector<std::byte> buf(4096 + 16);
  for (auto& b : buf) b = std::byte(rng.below(256));
  const std::span<const std::byte> all(buf);
  for (std::size_t align = 0; align < 8; ++align)
    for (std::size_t len = 0; len < 80; ++len) {
      const auto s = all.subspan(align, len);
      const std::uint32_t seed = static_cast<std::uint32_t>(rng.next());
      REQUIRE(crc32cUpdate(seed, s) == crc32cUpdateSoftware(seed, s));
    }
  for (std::size_t len : {255u, 1000u, 4095u, 4096u}) {
    const auto s = all.subspan(3, len);
    CHECK(crc32c(s) == crc32cUpdateSoftware(0, s));
  }
}

TEST_CASE("crc32c three-stream hardware path equals the table path around its chunk sizes") {
  // Inputs of 3 * kStream bytes and more go through three interleaved chains joined by a shift
  // (crc32c.h); lengths on both sides of one, two and three chunks, odd offsets, random seeds.
  Rng rng(13);
  constexpr std::size_t chunk = 3 * crc32c_detail::kStream;
  std::vector<std::byte> buf(3 * chunk + 64);
  for (auto& b : buf) b = std::byte(rng.below(256));
  const std::span<const std::byte> all(buf);
  for (std::size_t base : {chunk, 2 * chunk, 3 * chunk})
    for (std::size_t len : {base - 9, base - 1, base, base + 1, base + 7, base + 8, base + 53})
      for (std::size_t align : {0u, 3u}) {
        CAPTURE(len);
        CAPTURE(align);
        const auto s = all.subspan(align, std::min(len, buf.size() - align));
        const std::uint32_t seed = static_cast<std::uint32_t>(rng.next());
        REQUIRE(crc32cUpdate(seed, s) == crc32cUpdateSoftware(seed, s));
      }
  // A 1 MiB + 13 payload, and chained over a cut inside a chunk.
  std::vector<std::byte> big((std::size_t{1} << 20) + 13);
  for (auto& b : big) b = std::byte(rng.below(256));
  const std::span<const std::byte> bs(big);
  const std::uint32_t whole = crc32cUpdateSoftware(0, bs);
  CHECK(crc32c(bs) == whole);
  CHECK(crc32cUpdate(crc32c(bs.first(chunk + 100)), bs.subspan(chunk + 100)) == whole);
  // The shift over kStream zero bytes is the register after that many zero bytes.
  const std::vector<std::byte> zeros(crc32c_detail::kStream, std::byte{0});
  for (std::uint32_t r : {1u, 0x80000000u, 0xDEADBEEFu})
    CHECK(crc32c_detail::zeros(r, zeros.size()) == ~crc32cUpdateSoftware(~r, zeros));
}

TEST_CASE("crc32cUpdateCopy copies and checksums as crc32cUpdate and visits every whole word once") {
  // Around the three-stream chunk and the 8-byte word: the copy equals the source byte for byte, the
  // checksum equals the table path's, and the visited words are exactly the source's whole words (their
  // sum and xor, since the order is unspecified).
  Rng rng(29);
  constexpr std::size_t chunk = 3 * crc32c_detail::kStream;
  std::vector<std::byte> src(2 * chunk + 64);
  for (auto& b : src) b = std::byte(rng.below(256));
  for (std::size_t len : {std::size_t{0}, std::size_t{7}, std::size_t{8}, std::size_t{13}, chunk - 1, chunk, chunk + 5,
                          2 * chunk + 63})
    for (std::size_t align : {0u, 3u}) {
      CAPTURE(len);
      CAPTURE(align);
      const auto s = std::span<const std::byte>(src).subspan(align, std::min(len, src.size() - align));
      std::vector<std::byte> dst(s.size() + 1, std::byte{0x5A});
      std::uint64_t sum = 0, xr = 0, count = 0;
      const std::uint32_t seed = static_cast<std::uint32_t>(rng.next());
      const std::uint32_t crc = crc32cUpdateCopy(seed, s, dst.data(), [&](std::uint64_t w) {
        sum += w;
        xr ^= w;
        ++count;
      });
      CHECK(crc == crc32cUpdateSoftware(seed, s));
      CHECK(std::equal(s.begin(), s.end(), dst.begin()));
      CHECK(dst.back() == std::byte{0x5A});  // nothing written past the end
      std::uint64_t wantSum = 0, wantXor = 0;
      for (std::size_t i = 0; i + 8 <= s.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        wantSum += w;
        wantXor ^= w;
      }
      CHECK(count == s.size() / 8);
      CHECK(sum == wantSum);
      CHECK(xr == wantXor);
    }
}
