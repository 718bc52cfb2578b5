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
    checkSimMemory(c, estimateSimMemory(c, dim, 50, 4.0 * dim, data_bytes), available);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("the estimate per node is the documented list of state vectors - the messages - and 4 KiB") {
  // docs/algorithms.md "Precision and memory"; measured 127.6 KiB per node for this case (results §4).
  Config c;
  c.cluster.nodes = 1000;
  c.cluster.topology = "random_regular";
  c.cluster.degree = 4;
  c.algorithm.name = "deepsqueeze";
  c.compressor.name = "topk";
  const double d = 7850, msg = 640;
  auto e = estimateSimMemory(c, 7850, 60, msg, 0);
  // x, error memory, g and d bits (top-k mixes in place: no next x), no per-neighbour vectors; the
  // messages, and the mix's supports with x's values there (about a message per sender).
  const double v = 3 + 1.0 / (8 * sizeof(Real));
  CHECK(e.vectors_per_node == doctest::Approx(v));
  CHECK(e.per_node_bytes == doctest::Approx(v * d * sizeof(Real) + 6 * msg + 5 * msg + 4096));
  CHECK(e.bytes == doctest::Approx(1000 * e.per_node_bytes));
  c.compressor.name = "qsgd";  // a dense codec: the next x is built aside
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == 4);
  for (const char* sparse : {"randk", "topk_natural", "topk_dither"}) {  // the codecs that name their support
    CAPTURE(sparse);
    c.compressor.name = sparse;
    CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == doctest::Approx(v));
  }
  c.compressor.name = "topk";
  c.algorithm.name = "choco";  // + a replica per neighbour
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == 4 + 4);
  c.algorithm.name = "lead";  // x, d, h, g, y_hat, scratch, the mixed difference + h_j and e_ij per neighbour
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == 7 + 2 * 4);
  c.compressor.name = "fp32";  // with float32 state the round is one blocked pass: no y_hat, scratch or mix
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == (kRealIsDouble ? 7 : 4) + 2 * 4);
  c.compressor.name = "topk";
  c.algorithm.name = "dpsgd";
  c.compressor.name = "fp32";  // C(x_i) is x_i, and with float32 state the mix works on x in place
  const double v2 = kRealIsDouble ? 3 : 2;
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == v2);
  CHECK(estimateSimMemory(c, 7850, 60, msg, 5e9).bytes == doctest::Approx(1000 * (v2 * d * sizeof(Real) + 6 * msg + 4096) + 5e9));
  c.compressor.name = "qsgd";  // x, the next x aside, C(x_i) and g
  CHECK(estimateSimMemory(c, 7850, 60, msg, 0).vectors_per_node == 4);
}

TEST_CASE("memory estimate grows with nodes - dimension - degree and estimator memory") {
  Config c;
  c.cluster.nodes = 100;
  const auto base = estimateSimMemory(c, 1000, 50, 4000, 0);
  CHECK(base.bytes > 100 * 1000 * sizeof(Real) * 3);
  CHECK(estimateSimMemory(c, 2000, 50, 8000, 0).bytes > base.bytes);
  c.algorithm.name = "lead";
  CHECK(estimateSimMemory(c, 1000, 50, 4000, 0).bytes > base.bytes);
  c.algorithm.estimator = "saga";
  c.model.kind = "softmax";  // a table of sample gradients
  CHECK(estimateSimMemory(c, 1000, 50, 4000, 0).bytes > 5 * base.bytes);
  c.cluster.topology = "complete";
  CHECK(estimateSimMemory(c, 1000, 50, 4000, 0).average_degree == doctest::Approx(99));
  CHECK(estimateSimMemory(c, 1000, 50, 4000, 5e9).bytes >= 5e9);
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
  checkFails("", {"cluster.nodes=2000000"}, "cluster.nodes must be in [1,1048576]");
  checkFails("[faults]\njoin = [{node = 2000000, round = 5}]\n", {}, "faults.join[0].node must be < 1048576");
  checkFails("[faults]\ncrash = [{node = 4294967295, round = 5}]\n", {}, "faults.crash[0].node must be < 1048576");
}

TEST_CASE("MemAvailable is read on Linux") {
  const auto m = memAvailableBytes();
  if (m) CHECK(*m > 0);
}

}  // namespace
}  // namespace gossip::daemon
