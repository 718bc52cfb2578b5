#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "compressors/cast.h"
#include "compressors/compressor.h"
#include "core/crc32c.h"
#include "core/error.h"

using namespace gossip;
using namespace gossip::compress;

TEST_CASE("fp32 round trip is exact and size is header + 4d") {
  auto c = makeCompressor({.name = "fp32"});
  Rng rng(1);
  for (std::size_t d : {0u, 1u, 7u, 1000u}) {
    std::vector<double> x(d);
    for (auto& v : x) v = static_cast<float>(rng.normal());
    Encoded e;
    c->encode(std::span<const double>(x), rng, e);
    CHECK(e.size() == 8 + 4 * d);
    CHECK(e.size() == c->encodedBytes(static_cast<std::uint32_t>(d)));
    std::vector<double> y(d, 0.0);
    c->decodeAdd(e.view(), std::span<double>(y), 1.0);
    CHECK(y == x);
  }
}

TEST_CASE("fp32EncodeChecked writes fp32's bytes with their checksum and finds every non-finite value") {
  // The bytes are fp32's encode of the same floats, out.crc is the payload's crc32c (what the engine puts
  // in the frame header), and a NaN or infinity anywhere (in a whole 8-byte word, either half, or the odd
  // last value that is copied outside the words) makes it return false; the extreme finite values do not.
  auto c = makeCompressor({.name = "fp32"});
  Rng rng(7);
  for (std::size_t d : {0u, 1u, 2u, 3u, 4096u, 3u * 8192u / 4u + 1u, 100001u}) {
    CAPTURE(d);
    std::vector<float> x(d);
    for (auto& v : x) v = static_cast<float>(rng.normal());
    if (d >= 3) {
      x[0] = std::numeric_limits<float>::max();
      x[1] = -std::numeric_limits<float>::denorm_min();
      x[2] = -0.0f;
    }
    Encoded want, got;
    c->encode(std::span<const float>(x), rng, want);
    got.bytes.assign(3, std::byte{1});  // a reused buffer of another size
    REQUIRE(fp32EncodeChecked(x, got));
    CHECK(got.bytes == want.bytes);
    REQUIRE(got.knownCrc().has_value());
    CHECK(*got.knownCrc() == crc32c(got.bytes));
    CHECK_FALSE(want.knownCrc().has_value());  // a codec's encode says nothing of a checksum
    got.bytes.push_back(std::byte{0});         // a trailer appended after the encode: the checksum is stale
    CHECK_FALSE(got.knownCrc().has_value());
    for (std::size_t at : {std::size_t{0}, d / 2, d > 0 ? d - 1 : 0}) {
      if (at >= d) continue;
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> y = x;
        y[at] = bad;
        CAPTURE(at);
        CHECK_FALSE(fp32EncodeChecked(y, got));
      }
    }
  }
}

TEST_CASE("unknown compressor name is a config error") {
  CHECK_THROWS_AS(makeCompressor({.name = "nope"}), ConfigError);
}
