#pragma once
// The daemon's drift warning (docs/monitoring.md, "Drift warning"). The simulator watches the relative
// consensus distance mean_i ||x_i - xbar||^2 / ||xbar||^2 of the whole cluster; a daemon sees only its own
// disagreement with its neighbours, d_i = ||y_i - sum_j w_ij y_j|| (docs/monitoring.md). So each node feeds
// the same rule (ConsensusWatch) with the local analogue: the mean of d_i^2 over a window of rounds,
// divided by ||x_i||^2 at the window's end. The window smooths minibatch noise (the rule counts rises
// between consecutive values) and costs one norm of the model per window, not per round. When a
// consensus step diverges every node's disagreement grows with the cluster's, so every node warns.
// That ratio has a blind spot a cluster-wide view does not have: once the diverging part of the models
// dominates them, ||x_i|| grows as fast as d_i and the ratio stays flat (seen: CHOCO with gamma = 1 and
// top-10% on 4 daemons, d_i^2 and ||x_i||^2 both x10^10 in 400 rounds, the ratio near 0.2 throughout).
// So a second rule watches the model itself: ||x_i||^2 risen at each of the last 3 windows and 100x
// above its value 3 windows before is an explosion (training from a small start grows the norm too, but
// not tenfold every 150 rounds), and so is a model that is no longer finite.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "core/consensus_watch.h"
#include "training/dataset.h"

namespace gossip::daemon {

class DriftWatch {
 public:
  explicit DriftWatch(Round window = 50) : window_(window < 1 ? 1 : window) {}

  // After a mixed round (`done` rounds are complete); the warning the first time the rule holds.
  std::optional<std::string> afterRound(Round done, double disagreement, const training::Vec& x) {
    if (std::isfinite(disagreement)) {  // NaN before the first mix and in rounds that mixed nothing
      sum_ += disagreement * disagreement;
      ++count_;
    }
    if (done % window_ != 0 || count_ == 0) return std::nullopt;
    const double norm2 = x.squaredNorm();
    const double relative = norm2 > 0 ? sum_ / static_cast<double>(count_) / norm2 : std::nan("");
    sum_ = 0;
    count_ = 0;
    // Below the floor the nodes agree to round-off: the ratio's rises there are noise (an exact method
    // at its optimum warned of "drifting apart: 9.5e-33, up from 1.56e-33" in tests/netns/netns_split.sh
    // with float64 state, and of "3.03e-15, up from 3.92e-16" with float32). A real divergence starting
    // there is seen once it crosses the floor.
    auto w = relative >= kFloor ? watch_.observe(done, relative) : std::nullopt;
    if (!w) w = explosion(done, norm2);
    if (!w || !warning_.empty()) return std::nullopt;
    warning_ = *w;
    return w;
  }

  // The warning once given (for status.json), empty before.
  const std::string& warning() const { return warning_; }

  // Agreement to the state's round-off (core/consensus_watch.h): below it nothing is watched.
  static constexpr double kFloor = kRoundOffConsensus;

 private:
  // ||x||^2 at the end of the last 4 windows (oldest first) and how many windows in a row it rose.
  std::optional<std::string> explosion(Round done, double norm2) {
    if (!std::isfinite(norm2)) return "the model is no longer finite at round " + std::to_string(done) + advice();
    const bool rose = !norms_.empty() && norm2 > norms_.back().second;
    rising_ = rose ? rising_ + 1 : 0;
    norms_.push_back({done, norm2});
    if (norms_.size() > kRises + 1) norms_.erase(norms_.begin());
    if (rising_ < kRises || norms_.size() < kRises + 1 || norm2 < 100.0 * norms_.front().second) return std::nullopt;
    char buf[200];
    std::snprintf(buf, sizeof buf, "the model is blowing up: ||x||^2 went from %.3g at round %llu to %.3g at round %llu",
                  norms_.front().second, static_cast<unsigned long long>(norms_.front().first), norm2,
                  static_cast<unsigned long long>(done));
    return std::string(buf) + advice();
  }
  static std::string advice() {
    return "; lower algorithm.gamma (choco), algorithm.eta (deepsqueeze) or algorithm.lr, or use a milder compressor";
  }

  Round window_;
  double sum_ = 0;
  Round count_ = 0;
  // Without the early rule: the local ratio can stand above 1 in a healthy run (DeepSqueeze's d_i is
  // between compressed sketches, and ||x_i|| is small in the first rounds from a zero start); seen on 4
  // daemons, DeepSqueeze top-10%. The explosion rule below covers a blow-up from the start instead.
  ConsensusWatch watch_{3, 4.0, /*earlyRule=*/false};
  static constexpr std::size_t kRises = 3;
  std::vector<std::pair<Round, double>> norms_;
  std::size_t rising_ = 0;
  std::string warning_;
};

}  // namespace gossip::daemon
