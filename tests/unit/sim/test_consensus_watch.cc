// ConsensusWatch: warns once on a steady rise of the relative consensus distance after it first fell, and
// never on the early spread of nodes that start from one model or on noise around a level.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/consensus_watch.h"

using gossip::ConsensusWatch;

namespace {
// How many warnings a run of values gives, and at which evaluation the first came (-1: none).
std::pair<int, int> feed(const std::vector<double>& values) {
  ConsensusWatch w;
  int count = 0, first = -1;
  for (std::size_t k = 0; k < values.size(); ++k)
    if (w.observe(100 * (k + 1), values[k])) {
      if (first < 0) first = static_cast<int>(k);
      ++count;
    }
  return {count, first};
}
}  // namespace

TEST_CASE("consensus watch: a fall - then doubling at every evaluation - warns once at the third rise past 4x") {
  // Falls to 0.01 at evaluation 3, then doubles: 0.02, 0.04, 0.08 (3 rises, 8x), 0.16, ...
  const auto [count, first] = feed({0.5, 0.1, 0.03, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64});
  CHECK(count == 1);
  CHECK(first == 6);
}

TEST_CASE("consensus watch: the early spread from a shared start is not a warning") {
  // Starts at 0 (every node has x0) and grows for many evaluations before it levels off with noise.
  std::vector<double> v = {0.0, 1e-4, 1e-3, 4e-3, 9e-3, 1.5e-2, 2e-2};
  for (int k = 0; k < 40; ++k) v.push_back(2e-2 * (1.0 + 0.3 * std::sin(k)));
  CHECK(feed(v).second == -1);
}

TEST_CASE("consensus watch: rises that stay below 4x the minimum - or that break off - do not warn") {
  CHECK(feed({1.0, 0.5, 0.6, 0.8, 1.0, 1.2, 1.4, 1.9}).second == -1);   // 3.8x at most
  CHECK(feed({1.0, 0.1, 0.3, 0.9, 0.8, 2.0, 5.0}).second == -1);        // a dip resets the count
  CHECK(feed({1.0, 0.1, 0.3, 0.9, 0.8, 2.0, 5.0, 9.0}).second == 7);    // ... until three rises in a row
  CHECK(feed({1.0, 0.1, NAN, 0.3, 0.9, 2.0}).second == 5);              // a NaN is skipped
}

TEST_CASE("consensus watch: a run that blows up from the start warns once it is past 1 and rising") {
  // Never falls: the first rule would never arm. 0.9 -> 2e6 -> ...: warned at the third rise, past 1.
  const auto [count, first] = feed({0.1, 0.9, 2e6, 2e14, 1.5e22, 1.4e31, 2.5e31});
  CHECK(count == 1);
  CHECK(first == 3);
  // Rising from the start but staying below 1 (a shared start spreading out) is not a warning.
  CHECK(feed({1e-4, 1e-3, 1e-2, 0.1, 0.5, 0.9, 0.95}).second == -1);
  // Above 1 but not rising three times in a row (noise around a high level) is not either.
  CHECK(feed({2.0, 3.0, 2.5, 3.5, 3.0, 4.0, 3.8}).second == -1);
}
