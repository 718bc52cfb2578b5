#pragma once
// /metrics of a `gossipd run` node in the Prometheus text exposition format (version 0.0.4). The writer
// is a pure function of a small struct, filled from the node's status snapshot (daemon/node/node_status.h); every
// metric is described in docs/monitoring.md.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gossip::daemon {

// A cumulative-on-output histogram: counts are kept per bucket and summed when written.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upperBounds);  // ascending, finite; +Inf is implied
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<std::uint64_t>& perBucket() const { return counts_; }  // bounds().size() + 1 (+Inf)
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// Round duration buckets (seconds), chosen for the range rounds actually take: about 1 ms for a small
// model on loopback, 10-100 ms for Fashion-MNIST-sized models or a real network, and up to the failure
// detector's bound (about 1-2 s with the defaults) when a round waits for a neighbour that died; 5 and
// 10 s catch rounds stalled by a slow link or a long state transfer. Steps of 1-2.5-5 per decade.
inline constexpr double kRoundDurationBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                   0.1,    0.25,  0.5,    1,     2.5,  5,     10};

struct LinkTraffic {
  std::string peer;  // node id, or "unknown" (frames to a seed whose id is not known yet, or from a sender
                     // that is not a member)
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

struct MemberSample {
  std::string peer;  // node id
  bool up = false;        // in this node's alive view (alive or suspect)
  bool suspect = false;
  std::optional<double> last_heard_seconds;  // since the last frame from it (none: never heard)
};

struct NodeMetrics {
  std::uint32_t id = 0;
  std::uint64_t incarnation = 0;
  std::string state;     // joining, syncing, training, stopped, done
  std::string endpoint;  // advertised ZeroMQ endpoint
  std::uint64_t round = 0;
  std::uint64_t rounds_configured = 0;
  double train_loss = 0;
  std::optional<double> test_accuracy;  // only once evaluated
  std::optional<double> disagreement;   // Algorithm::disagreement() of the last mixed round (none before)
  std::uint64_t alive_members = 0;
  std::uint64_t neighbors = 0;
  std::vector<LinkTraffic> links;
  std::optional<double> compression_ratio;  // only once a model frame was sent
  std::uint64_t model_bytes_sent = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t messages_missing = 0;
  std::map<std::string, std::uint64_t> rejected_by_reason;
  std::map<std::string, std::uint64_t> joins_refused;  // Joins this node refused, by reason (identity, duplicate_id, foreign)
  std::uint64_t suspicions = 0;
  std::uint64_t refutations = 0;
  std::uint64_t deaths = 0;
  std::map<std::string, std::uint64_t> death_verdicts;  // verdicts on this node's life, by outcome (node_status.h)
  std::uint64_t disconnects = 0;
  std::uint64_t state_transfers_sent = 0;
  std::uint64_t state_transfers_received = 0;
  std::vector<MemberSample> members;  // other members, self excluded
  // The mixing row of this node in its current view graph (none before the first view), and the spectral
  // gap 1 - ||W - 11^T/n||_2 of that graph's W (none above daemon/monitor/cluster_view.h's size limit).
  std::optional<double> self_weight;
  std::vector<std::pair<std::string, double>> mixing_weights;  // (peer id, w_ij)
  std::optional<double> spectral_gap;
  const Histogram* round_duration = nullptr;
  double compute_seconds = 0;
  std::optional<double> checkpoint_age_seconds;  // only once this process wrote a checkpoint
  std::uint64_t last_checkpoint_round = 0;
  double uptime_seconds = 0;
  bool drift_warning = false;  // daemon/monitor/drift_watch.h gave its warning
  bool isolated = false;       // every other member dead: rounds held (docs/daemon.md, Partitions)
  // trainer.enable only (docs/trainer.md): the bridge's state, rounds begun from the trainer's requests,
  // and the time in its shared-memory copies.
  struct Trainer {
    std::string state;  // one of kTrainerStates
    std::uint64_t rounds = 0;
    double copy_seconds = 0;
  };
  std::optional<Trainer> trainer;
};

inline constexpr std::string_view kTrainerStates[] = {"attached", "detached", "none"};

// The states gossipd_state is written for (one series each, 1 for the current one).
inline constexpr std::string_view kNodeStates[] = {"joining", "syncing", "training", "stopped", "done"};

std::string renderMetrics(const NodeMetrics& m);

// Exposition-format helpers (exposed for the unit test).
std::string escapeLabelValue(std::string_view v);  // \ -> \\, " -> \", newline -> \n
std::string formatValue(double v);                 // shortest round-trip (%g style); NaN, +Inf, -Inf

}  // namespace gossip::daemon
