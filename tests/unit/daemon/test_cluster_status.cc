// Status gossip for /cluster (daemon/monitor/cluster_status.h): the newest summary per node wins, a node's own
// entry is never overwritten by hearsay, and decoding refuses every malformed table.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "daemon/monitor/cluster_status.h"

using gossip::Bytes;
using gossip::DecodeError;
using gossip::daemon::ClusterStatus;
using gossip::daemon::NodeSummary;

namespace {
NodeSummary summary(gossip::PeerId id, gossip::Incarnation inc, std::uint64_t seq, gossip::Round round) {
  NodeSummary s;
  s.id = id;
  s.incarnation = inc;
  s.seq = seq;
  s.round = round;
  s.rounds = 1000;
  s.loss = 0.5f;
  s.accuracy = 0.75f;
  s.disagreement = 0.25f;
  s.bytes_sent = 123456789012ull;
  return s;
}
}  // namespace

TEST_CASE("a status table survives encode and decode - self first") {
  ClusterStatus a(3);
  NodeSummary self = summary(3, 0, 0, 42);
  self.loss = std::numeric_limits<float>::quiet_NaN();  // not known yet: allowed
  self.disagreement = std::numeric_limits<float>::quiet_NaN();
  a.updateSelf(self, 10);
  const NodeSummary others[] = {summary(1, 0, 5, 40), summary(7, 2, 1, 41)};
  CHECK(a.merge(others, 10) == 2);
  const auto got = ClusterStatus::decode(a.encode());
  REQUIRE(got.size() == 3);
  CHECK(got[0].id == 3);
  CHECK(got[0].seq == 1);
  CHECK(std::isnan(got[0].loss));
  CHECK(got[1].id == 1);
  CHECK(got[2].id == 7);
  CHECK(got[2].incarnation == 2);
  CHECK(got[2].bytes_sent == 123456789012ull);
  CHECK(got[2].accuracy == 0.75f);
  CHECK(std::isnan(got[0].disagreement));  // none mixed yet
  CHECK(got[2].disagreement == 0.25f);
}

TEST_CASE("summaryFloat keeps NaN and clamps what float cannot hold - so a diverged node still shows") {
  CHECK(std::isnan(gossip::daemon::summaryFloat(std::nan(""))));
  CHECK(gossip::daemon::summaryFloat(1e300) == std::numeric_limits<float>::max());
  CHECK(gossip::daemon::summaryFloat(-1e300) == -std::numeric_limits<float>::max());
  CHECK(gossip::daemon::summaryFloat(std::numeric_limits<double>::infinity()) == std::numeric_limits<float>::max());
  CHECK(gossip::daemon::summaryFloat(0.5) == 0.5f);
  NodeSummary s = summary(1, 0, 1, 1);
  s.loss = gossip::daemon::summaryFloat(1e300);
  s.disagreement = gossip::daemon::summaryFloat(1e300);
  ClusterStatus a(1);
  a.updateSelf(s, 0);
  CHECK(ClusterStatus::decode(a.encode())[0].loss == std::numeric_limits<float>::max());
}

TEST_CASE("merge keeps the newest summary by incarnation - then sequence - and never overwrites self") {
  ClusterStatus t(0);
  t.updateSelf(summary(0, 0, 0, 10), 1);
  const NodeSummary first[] = {summary(1, 1, 5, 100), summary(0, 9, 99, 999)};
  CHECK(t.merge(first, 1) == 1);
  CHECK(t.find(0)->s.round == 10);  // hearsay about self is ignored
  const NodeSummary older[] = {summary(1, 1, 4, 200), summary(1, 0, 50, 300)};
  CHECK(t.merge(older, 2) == 0);
  CHECK(t.find(1)->s.round == 100);
  const NodeSummary newer[] = {summary(1, 1, 6, 101)};
  CHECK(t.merge(newer, 3) == 1);
  CHECK(t.find(1)->s.round == 101);
  CHECK(t.find(1)->receivedMs == 3);
  const NodeSummary restarted[] = {summary(1, 2, 1, 50)};  // a new life starts its sequence again
  CHECK(t.merge(restarted, 4) == 1);
  CHECK(t.find(1)->s.round == 50);
}

TEST_CASE("decode refuses malformed tables") {
  ClusterStatus a(1);
  a.updateSelf(summary(1, 0, 0, 5), 0);
  const NodeSummary other[] = {summary(2, 0, 1, 6)};
  a.merge(other, 0);
  const Bytes good = a.encode();
  REQUIRE(ClusterStatus::decode(good).size() == 2);

  CHECK_THROWS_AS(ClusterStatus::decode({}), DecodeError);
  Bytes b = good;
  b[0] = std::byte{ClusterStatus::kVersion - 1};  // the previous layout (without disagreement)
  CHECK_THROWS_AS(ClusterStatus::decode(b), DecodeError);
  b = good;
  b.pop_back();  // truncated
  CHECK_THROWS_AS(ClusterStatus::decode(b), DecodeError);
  b = good;
  b.push_back(std::byte{0});  // trailing
  CHECK_THROWS_AS(ClusterStatus::decode(b), DecodeError);
  b = good;
  b[1] = std::byte{0xFF};  // a count the bytes do not hold
  b[2] = std::byte{0xFF};
  CHECK_THROWS_AS(ClusterStatus::decode(b), DecodeError);

  ClusterStatus bad(1);
  NodeSummary s = summary(1, 0, 0, 5);
  s.accuracy = std::numeric_limits<float>::infinity();
  bad.updateSelf(s, 0);
  CHECK_THROWS_AS(ClusterStatus::decode(bad.encode()), DecodeError);
  s.accuracy = 0.5f;
  s.disagreement = -1.0f;  // a norm is never negative
  bad.updateSelf(s, 0);
  CHECK_THROWS_AS(ClusterStatus::decode(bad.encode()), DecodeError);
  s.disagreement = 0.0f;
  s.state = 200;
  bad.updateSelf(s, 0);
  CHECK_THROWS_AS(ClusterStatus::decode(bad.encode()), DecodeError);
}
