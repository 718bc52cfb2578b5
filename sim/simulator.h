#pragma once
// Simulator: N virtual nodes in one process, each an algo::Node (the same round code the daemon runs),
// exchanging the same encoded payloads over an in-process, synchronous network. Membership changes
// (crash, join) rebuild the topology from the alive view, as every daemon would, and add/drop edge state at
// both ends of each changed edge in the same step. Deterministic for a given setup.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "topology/topology.h"
#include "training/estimators.h"
#include "training/model.h"
#include "training/partition.h"
#include "training/schedule.h"

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
  Round eval_every = 10;
  std::size_t eval_test_max = 0;  // 0 = all test samples
  std::uint64_t seed = 1;
  unsigned threads = 1;  // nodes' round work is spread over this many threads; results do not depend on it
};

struct EvalRecord {
  Round round = 0;
  double loss = 0;                 // mean over alive nodes of f_i(x_i) on own data (smooth part + l1)
  double accuracy = 0;             // of the average model on the test set (classification)
  double node_accuracy_min = 0;    // over up to 64 evenly spaced alive nodes
  double node_accuracy_max = 0;
  double consensus_distance = 0;   // mean_i ||x_i - xbar||^2
  std::uint64_t bytes_sent = 0;    // cumulative wire bytes, headers included, all nodes
  std::uint64_t messages_dropped = 0;
  std::optional<double> suboptimality;  // F(xbar) - F* of the alive nodes' objective
  std::optional<double> rel_error;      // max_i ||x_i - x*|| / ||x*||
  std::uint32_t alive = 0;
  double seconds = 0;              // wall time since start (progress only; not a benchmark)
};

class Simulator {
 public:
  explicit Simulator(SimSetup setup);
  ~Simulator();

  // Runs all rounds; calls progress after each evaluation.
  std::vector<EvalRecord> run(const std::function<void(const EvalRecord&)>& progress = {});

 private:
  void addNode(PeerId id);
  void rewire();
  void exchange(Round t);
  // Runs fn(node) for every alive node on s_.threads threads. Nodes share nothing mutable during a
  // phase (models keep thread-local scratch, each node owns its estimator and algorithm), so the result
  // is the same for any thread count.
  void forEachNode(const std::function<void(algo::Node&)>& fn);
  EvalRecord evaluate(Round t);
  const training::Vec* optimum();

  SimSetup s_;
  std::map<PeerId, std::unique_ptr<algo::Node>> nodes_;
  std::map<PeerId, topology::MixingRow> rows_;
  std::map<PeerId, compress::Encoded> outbox_;  // this round's message per node; buffers reused
  std::vector<std::pair<PeerId, PeerId>> edges_;  // undirected edges with state, sorted
  bool timeVarying_ = false;
  std::uint64_t bytes_ = 0, dropped_ = 0;
  std::mutex dropMutex_;  // guards dropped_ during the parallel receive phase
  std::map<std::vector<PeerId>, training::Vec> optima_;  // per alive set
  std::unique_ptr<training::Dataset> evalSet_, nodeEvalSet_;  // bounded test subsets, built once
};

}  // namespace gossip::sim
