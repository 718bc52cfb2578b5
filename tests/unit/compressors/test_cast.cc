#include <doctest/doctest.h>

#include <vector>

#include "compressors/compressor.h"
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

TEST_CASE("unknown compressor name is a config error") {
  CHECK_THROWS_AS(makeCompressor({.name = "nope"}), ConfigError);
}
