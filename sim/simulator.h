#pragma once
// Simulator: N virtual nodes in one process, each driven by an engine::SyncEngine (the same round engine
// the daemon runs) over the in-process transport: real frames, real edge handshakes and state transfers.
// The simulator only sequences the phases of a synchronous round and plays the membership service:
// a crash removes a node, a join adds one (a restart of a crashed id is a new incarnation), and every
// engine then installs the same new view. Deterministic for a given setup, for any thread count.
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "engine/sync_engine.h"
#include "topology/topology.h"
#include "training/estimators.h"
#include "training/model.h"
#include "training/partition.h"
#include "training/schedule.h"
#include "transport/inproc/inproc.h"

namespace gossip::sim {

struct MembershipEvent {
  PeerId node = 0;
  Round round = 0;
};

struct SimSetup {
  // Problem. Node id i trains on partition[i]; ids >= initial_nodes only appear through joins.
  const training::Model* model = nullptr;
  const training::Dataset* train = nullptr;
  const training::Dataset* test = nullptr;  // may be null: accuracy is then measured on train
  training::Partition partition;
  bool reference = false;  // compute the centralized optimum of the alive nodes (convex problems)
  // codistill's reference rows (algorithm.distill_reference), given to every node's estimator; may be null.
  const training::Dataset* distill_reference = nullptr;

  // Method.
  algo::AlgorithmParams algorithm;
  const compress::Compressor* compressor = nullptr;
  training::EstimatorSpec estimator;
  training::LrSchedule lr;
  training::LocalStepsSchedule local;

  // Network.
  std::uint32_t initial_nodes = 8;
  topology::TopologyParams topology;
  topology::WeightRule weights = topology::WeightRule::Metropolis;
  double drop = 0.0;  // per-message loss probability, stateless algorithms only
  std::vector<MembershipEvent> crashes, joins;

  // Run.
  Round rounds = 100;
  Round final_consensus_rounds = 0;
  std::string final_consensus_codec = "fp32";  // algo::NodeSchedule::consensus_codec  // the last rounds only average (algo::NodeSchedule::consensus_from)
  Round eval_every = 10;
  std::size_t eval_test_max = 0;  // 0 = all test samples
  std::uint64_t seed = 1;
  unsigned threads = 1;  // nodes' round work is spread over this many threads; results do not depend on it

  // Checkpoints: after round `save_after` (0 = never) every node's state is written to save_dir; a run
  // with resume_dir set continues from such a directory (same config) and ends bit-identical to a run
  // that was never interrupted.
  Round save_after = 0;
  std::string save_dir;
  std::string resume_dir;
};

struct EvalRecord {
  Round round = 0;
  double loss = 0;                 // mean over alive nodes of f_i(x_i) on own data (smooth part + l1)
  double accuracy = 0;             // of the average model on the test set (classification)
  // Accuracy of single nodes' models. During the run: up to 64 evenly spaced alive nodes on the first
  // 1,000 samples of the evaluation set (a cheap progress figure). The last record: every alive node (up
  // to 256, evenly spaced beyond that) on the whole evaluation set, the figure a user keeps.
  double node_accuracy_min = 0;
  double node_accuracy_max = 0;
  double node_accuracy_mean = 0;
  std::uint32_t node_eval_nodes = 0;    // how many nodes were evaluated
  std::size_t node_eval_samples = 0;    // on how many samples each
  double consensus_distance = 0;   // mean_i ||x_i - xbar||^2
  double relative_consensus = 0;   // consensus_distance / ||xbar||^2 (ConsensusWatch reads it)
  // CHOCO's consensus step in use over the alive nodes (algorithms/choco.h: it may adapt); NaN otherwise.
  double gamma_min = std::numeric_limits<double>::quiet_NaN();
  double gamma_max = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t bytes_sent = 0;    // cumulative model-frame bytes, headers included, all nodes
  std::uint64_t control_bytes_sent = 0;  // edge handshakes and state transfers (churn only)
  std::uint64_t messages_dropped = 0;
  std::uint64_t messages_rejected = 0;
  std::optional<double> suboptimality;  // F(xbar) - F* of the alive nodes' objective
  std::optional<double> rel_error;      // max_i ||x_i - x*|| / ||x*||
  std::uint32_t alive = 0;
  double seconds = 0;              // wall time since start (progress only; not a benchmark)
};

// Node `id` in life `inc` as the setup defines it: the shared initial model (a draw of the shared seed),
// the algorithm, the estimator over partition[id] and the schedules. The daemon builds its node with the
// same function, which is why a daemon cluster and the simulator compute the same numbers.
std::unique_ptr<algo::Node> makeNode(const SimSetup& s, PeerId id, Incarnation inc);

class Simulator {
 public:
  explicit Simulator(SimSetup setup);
  ~Simulator();

  // Runs all rounds; calls progress after each evaluation.
  std::vector<EvalRecord> run(const std::function<void(const EvalRecord&)>& progress = {});

  // Sum over alive nodes of the edge-decomposed dual d_i (LEAD family), for invariant checks: it is 0 up
  // to rounding after every round, whatever crashed or joined. Empty for methods without a dual.
  std::optional<training::Vec> dualSum() const;
  // Every alive node's model (after run(): the final models), by id.
  std::map<PeerId, training::Vec> models() const;

 private:
  struct Sim;  // one virtual node: its transport and engine
  void addNode(PeerId id, Incarnation inc);
  void removeNode(PeerId id);
  void installView(Round t);
  void pumpControl(Round t);
  void round(Round t);
  void save(Round nextRound) const;
  Round resume();
  // Runs fn(engine) for every alive node on s_.threads threads. Engines share nothing mutable during a
  // phase (models keep thread-local scratch, mailboxes are locked), so the result is the same for any
  // thread count.
  void forEachEngine(const std::function<void(engine::NodeEngine&)>& fn);
  EvalRecord evaluate(Round t, bool last);
  const training::Vec* optimum();

  SimSetup s_;
  bool stateless_ = true;
  bool timeVarying_ = false;
  engine::InprocNetwork net_;
  std::map<PeerId, std::unique_ptr<Sim>> nodes_;
  std::map<PeerId, Incarnation> incarnations_;  // last incarnation of every id ever started
  std::uint64_t epoch_ = 0;
  Round first_ = 0;  // the round run() starts at (after a resume, the saved one)
  // Totals of engines that no longer exist (crashed), so byte counts stay cumulative.
  std::uint64_t goneBytes_ = 0, goneControl_ = 0, goneRejected_ = 0, droppedBase_ = 0;
  std::map<std::vector<PeerId>, training::Vec> optima_;  // per alive set
  std::unique_ptr<training::Dataset> evalSet_, nodeEvalSet_;  // bounded test subsets, built once
};

}  // namespace gossip::sim
