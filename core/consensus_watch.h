#pragma once
// ConsensusWatch: notices a run whose nodes drift apart. It is fed the relative consensus distance
// mean_i ||x_i - xbar||^2 / ||xbar||^2 at each evaluation and says so once when that value has grown at
// each of the last `rises` evaluations and stands at least `factor` times above the lowest value seen
// since it first fell. Until that first fall the watch only records: nodes that start from one shared
// model drift apart at first as a matter of course, and that early rise is not an instability.
// Why relative: a model whose norm grows (DeepSqueeze's does) grows its absolute consensus distance with
// it while the nodes agree as well as before. Why not a single rise: minibatch noise moves the value up
// and down between evaluations; an unstable consensus step (CHOCO with too large a gamma for its
// compressor and graph) makes it grow steadily, doubling every few hundred rounds, and the model's
// accuracy falls only much later.
// A run that blows up from its first rounds never falls, so a second rule needs no fall: the value
// stands above 1 (the nodes are farther apart than the average model is from zero, which no consensus
// does) and has grown at each of the last `rises` evaluations.
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "core/bytes.h"
#include "core/real.h"
#include "core/types.h"

namespace gossip {

// A relative consensus distance (squared, as fed to observe) below which the nodes agree to the state's
// round-off: a distance four orders above the epsilon of a mixing step's arithmetic, 2.2e-12 of the model's
// norm with float64 state and 1.2e-3 with float32 (core/real.h). An exact method at its optimum disagrees
// by about half an epsilon and its ratio rises and falls by 10x there by chance: the daemon warned
// "drifting apart: 9.5e-33, up from 1.56e-33" with float64 state and "3.03e-15, up from 3.92e-16" with
// float32 (tests/netns/netns_split.sh). A diverging consensus step grows geometrically and crosses the
// floor within a few evaluations; a healthy compressed run sits at 1e-6 to 1e-2 squared, where only a rise
// warns. The callers that warn (the daemon's drift watch, `gossipd sim`) feed only values above it;
// CHOCO's adaptive step (algorithms/choco.h) sees every value.
inline constexpr double kRoundOffConsensus = [] {
  const double e = 1e4 * static_cast<double>(std::numeric_limits<Real>::epsilon());
  return e * e;
}();

class ConsensusWatch {
 public:
  // earlyRule: the second rule above; it needs the true relative distance (the simulator's), where
  // values above 1 mean what they say.
  explicit ConsensusWatch(unsigned rises = 3, double factor = 4.0, bool earlyRule = true)
      : rises_(rises), factor_(factor), earlyRule_(earlyRule) {}

  // The warning, the first time the rule holds; nothing before or after.
  std::optional<std::string> observe(Round t, double relative) {
    if (!std::isfinite(relative)) return std::nullopt;
    if (!armed_) {
      armed_ = previous_ && relative < *previous_;
      if (!armed_) {
        earlyRising_ = previous_ && relative > *previous_ ? earlyRising_ + 1 : 0;
        if (!earlyMinimum_ || relative < *earlyMinimum_) {
          earlyMinimum_ = relative;
          earlyMinimumRound_ = t;
        }
        previous_ = relative;
        if (!earlyRule_ || warned_ || earlyRising_ < rises_ || relative <= 1.0) return std::nullopt;
        warned_ = true;
        return message(t, relative, *earlyMinimum_, earlyMinimumRound_);
      }
      previous_ = relative;
    }
    if (!minimum_ || relative < *minimum_) {
      minimum_ = relative;
      minimumRound_ = t;
    }
    rising_ = relative > *previous_ ? rising_ + 1 : 0;
    previous_ = relative;
    if (warned_ || rising_ < rises_ || relative < factor_ * *minimum_) return std::nullopt;
    warned_ = true;
    return message(t, relative, *minimum_, minimumRound_);
  }


  // What the watch has seen (not its rule's parameters), for a checkpoint: CHOCO's adaptive consensus
  // step keeps one, and a resumed run must act as the uninterrupted one would.
  void save(ByteWriter& w) const {
    putOptional(w, earlyMinimum_);
    putOptional(w, minimum_);
    putOptional(w, previous_);
    w.put<std::uint64_t>(earlyMinimumRound_);
    w.put<std::uint64_t>(minimumRound_);
    w.put<std::uint32_t>(earlyRising_);
    w.put<std::uint32_t>(rising_);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(armed_ | (warned_ << 1)));
  }
  void load(ByteReader& r) {
    earlyMinimum_ = getOptional(r);
    minimum_ = getOptional(r);
    previous_ = getOptional(r);
    earlyMinimumRound_ = r.get<std::uint64_t>();
    minimumRound_ = r.get<std::uint64_t>();
    earlyRising_ = r.get<std::uint32_t>();
    rising_ = r.get<std::uint32_t>();
    const auto flags = r.get<std::uint8_t>();
    armed_ = flags & 1;
    warned_ = flags & 2;
  }

 private:
  static void putOptional(ByteWriter& w, const std::optional<double>& v) {
    w.put<std::uint8_t>(v.has_value());
    w.put<double>(v.value_or(0.0));
  }
  static std::optional<double> getOptional(ByteReader& r) {
    const bool has = r.get<std::uint8_t>() != 0;
    const double v = r.get<double>();
    return has ? std::optional<double>(v) : std::nullopt;
  }

  std::string message(Round t, double relative, double low, Round lowRound) const {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "the nodes are drifting apart: relative consensus distance %.3g at round %llu, up from %.3g at "
                  "round %llu and rising at each of the last %u evaluations; lower algorithm.gamma (choco) or "
                  "algorithm.eta (deepsqueeze), or use a milder compressor",
                  relative, static_cast<unsigned long long>(t), low, static_cast<unsigned long long>(lowRound), rises_);
    return std::string(buf);
  }

  unsigned rises_;
  double factor_;
  bool earlyRule_;
  std::optional<double> earlyMinimum_;
  Round earlyMinimumRound_ = 0;
  unsigned earlyRising_ = 0;
  std::optional<double> minimum_, previous_;
  Round minimumRound_ = 0;
  unsigned rising_ = 0;
  bool armed_ = false;
  bool warned_ = false;
};

}  // namespace gossip
