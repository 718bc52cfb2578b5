// The sim memory estimate: refuses runs that cannot fit, naming the key to change.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "daemon/config/memory_estimate.h"
#include "tests/unit/daemon/config_test_util.h"

namespace gossip::daemon {
namespace {

using namespace testutil;

std::string refusal(const Config& c, std::size_t dim, double data_bytes, std::uint64_t available) {
  try {
    checkSimMemory(c, estimateSimMemory(c, dim, 50, 2, data_bytes), available);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("memory estimate grows with nodes - dimension - degree and estimator memory") {
  Config c;
  c.cluster.nodes = 100;
  const auto base = estimateSimMemory(c, 1000, 50, 2, 0);
  CHECK(base.bytes > 100 * 1000 * 8 * 4);
  CHECK(estimateSimMemory(c, 2000, 50, 2, 0).bytes > base.bytes);
  c.algorithm.name = "lead";
  CHECK(estimateSimMemory(c, 1000, 50, 2, 0).bytes > base.bytes);
  c.algorithm.estimator = "saga";
  c.model.kind = "softmax";  // a table of sample gradients
  CHECK(estimateSimMemory(c, 1000, 50, 2, 0).bytes > 5 * base.bytes);
  c.cluster.topology = "complete";
  CHECK(estimateSimMemory(c, 1000, 50, 2, 0).average_degree == doctest::Approx(99));
  CHECK(estimateSimMemory(c, 1000, 50, 2, 5e9).bytes >= 5e9);
}

TEST_CASE("a run larger than MemAvailable is refused in one line naming the key") {
  Config c;
  c.cluster.nodes = 60000;
  const std::string msg = refusal(c, 100000, 0, std::uint64_t{8} << 30);
  CAPTURE(msg);
  CHECK(has(msg, "cluster.nodes = 60000"));
  CHECK(has(msg, "MemAvailable"));
  CHECK(has(msg, "GB"));
  CHECK_FALSE(has(msg, "\n"));
  CHECK(refusal(c, 10, 0, std::uint64_t{8} << 30).empty());
  CHECK(refusal(c, 100000, 0, 0).size() > 0);

  // A join of a large id cuts the data into that many shards: the join is named.
  Config j;
  j.faults.join = {{3, 1}, {50000, 2}};
  const std::string joined = refusal(j, 41, 4.0 * 50001 * 50 * 41, 100u << 20);
  CAPTURE(joined);
  CHECK(has(joined, "faults.join[1].node = 50000"));
}

TEST_CASE("absurd node ids are refused by validation") {
  checkFails("", {"cluster.nodes=1000000"}, "cluster.nodes must be in [1,65536]");
  checkFails("[faults]\njoin = [{node = 1000000, round = 5}]\n", {}, "faults.join[0].node must be < 65536");
  checkFails("[faults]\ncrash = [{node = 4294967295, round = 5}]\n", {}, "faults.crash[0].node must be < 65536");
}

TEST_CASE("MemAvailable is read on Linux") {
  const auto m = memAvailableBytes();
  if (m) CHECK(*m > 0);
}

}  // namespace
}  // namespace gossip::daemon
