// DriftWatch (daemon/monitor/drift_watch.h): the daemon's local drift warning. A steady disagreement, noisy from
// round to round, never warns; one that falls and then doubles every 100 rounds warns once, with the round;
// a ratio above 1 from the start alone does not warn, a model that blows up does; rounds that mixed nothing
// (NaN) are skipped.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/real.h"
#include "daemon/monitor/drift_watch.h"

using gossip::Round;
using gossip::daemon::DriftWatch;
using gossip::training::Vec;

namespace {
// Feeds rounds 1..rounds with disagreement d(t) and a model of norm 1; returns the round of the first
// warning (0: none) and how many warnings came.
template <class D>
std::pair<Round, int> run(Round rounds, D d) {
  DriftWatch w(50);
  const Vec x = Vec::Ones(4) / 2.0;  // norm 1
  Round first = 0;
  int count = 0;
  for (Round t = 1; t <= rounds; ++t)
    if (w.afterRound(t, d(t), x)) {
      if (!first) first = t;
      ++count;
    }
  return {first, count};
}
}  // namespace

TEST_CASE("drift watch: a steady - noisy disagreement never warns") {
  auto [first, count] = run(5000, [](Round t) { return 0.1 * (1.0 + 0.5 * std::sin(0.7 * static_cast<double>(t))); });
  CHECK(first == 0);
  CHECK(count == 0);
}

TEST_CASE("drift watch: rises at round-off level (an exact method at its optimum) never warn") {
  // Doubling every 100 rounds from 1e-17 (a relative ratio near 1e-34): the pattern that warns above the
  // floor, here noise of the last bits, and it stays below the floor for the whole run.
  auto [first, count] = run(2000, [](Round t) { return 1e-17 * std::exp2(static_cast<double>(t % 700) / 100.0); });
  CHECK(first == 0);
  CHECK(count == 0);
}

TEST_CASE("drift watch: rises at the state's round-off (float32 or float64) never warn") {
  // An exact method at its optimum with float32 state: its nodes disagree by about half an epsilon of the
  // model's norm, and the ratio rises and falls by 10x there (tests/netns/netns_split.sh warned "drifting
  // apart: 3.03e-15, up from 3.92e-16"). Doubling every 100 rounds from 0.5 epsilon to 64 epsilon.
  const double eps = std::numeric_limits<gossip::Real>::epsilon();
  auto [first, count] = run(3000, [&](Round t) { return 0.5 * eps * std::exp2(static_cast<double>(t % 700) / 100.0); });
  CHECK(first == 0);
  CHECK(count == 0);
  CHECK(DriftWatch::kFloor > (100 * eps) * (100 * eps));
}

TEST_CASE("drift watch: a fall - then doubling every 100 rounds - warns once") {
  // Falls until round 1000, then d doubles every 100 rounds (d^2 quadruples).
  auto d = [](Round t) {
    const double s = static_cast<double>(t);
    return t <= 1000 ? 1.0 / s : 1e-3 * std::pow(2.0, (s - 1000) / 100);
  };
  auto [first, count] = run(3000, d);
  CHECK(count == 1);
  CHECK(first > 1000);
  CHECK(first <= 1300);  // three rising windows past 4x the minimum
  DriftWatch w(50);
  const Vec x = Vec::Ones(4) / 2.0;
  for (Round t = 1; t <= 3000; ++t) (void)w.afterRound(t, d(t), x);
  CHECK(w.warning().find("drifting apart") != std::string::npos);
}

TEST_CASE("drift watch: a local ratio above 1 that rises from the start is not a warning by itself") {
  // DeepSqueeze's d_i is between sketches and ||x_i|| is small from a zero start: a healthy run saw the
  // ratio go 1.4 -> 3.0 over its first windows. Rising from the start with the model steady: no warning
  // (a real blow-up grows the model too: the explosion rule, below).
  auto [first, count] = run(400, [](Round t) { return 1.0 + 0.005 * static_cast<double>(t); });
  CHECK(count == 0);
  CHECK(first == 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(run(2000, [&](Round) { return nan; }).second == 0);
}

TEST_CASE("drift watch: a model that blows up with its disagreement (flat ratio) warns - slow growth does not") {
  // d_i = 0.5 ||x_i||: the ratio stays at 0.25, the first rule is blind; ||x||^2 grows 10x per 50 rounds.
  auto feed = [](double growthPerWindow) {
    DriftWatch w(50);
    Round first = 0;
    for (Round t = 1; t <= 2000 && !first; ++t) {
      const double scale = std::pow(growthPerWindow, static_cast<double>(t) / 100.0);  // ||x||^2 per 50 rounds
      const Vec x = Vec::Constant(4, 0.5 * scale);
      if (auto m = w.afterRound(t, 0.5 * x.norm(), x)) {
        first = t;
        CHECK(m->find("the model is blowing up") != std::string::npos);
      }
    }
    return first;
  };
  const Round first = feed(10.0);
  CHECK(first == 200);  // risen at windows 100, 150, 200, and 1000x above round 50
  CHECK(feed(1.5) == 0);  // ||x||^2 x3.4 in three windows: training, not an explosion
  DriftWatch w;
  const Vec inf = Vec::Constant(2, std::numeric_limits<double>::infinity());
  std::optional<std::string> m;
  for (Round t = 1; t <= 50; ++t) m = w.afterRound(t, 1.0, inf);
  REQUIRE(m.has_value());
  CHECK(m->find("no longer finite at round 50") != std::string::npos);
}
