#include "daemon/sim_setup.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "training/data_loader.h"
#include "training/model_factory.h"
#include "training/partition.h"
#include "training/synthetic.h"

namespace gossip::daemon {
namespace {

// The centralized reference solve runs full-batch FISTA to machine precision: only affordable on small
// convex problems (it is what `suboptimality` and `rel_error` are measured against).
constexpr double kReferenceMaxEntries = 2e6;

bool convex(const std::string& kind) { return kind != "mlp"; }

}  // namespace

std::unique_ptr<SimProblem> buildSimProblem(const Config& c) {
  auto p = std::make_unique<SimProblem>();
  PeerId maxId = c.cluster.nodes - 1;
  for (const auto& j : c.faults.join) maxId = std::max(maxId, j.node);
  const int shards = static_cast<int>(maxId) + 1;

  if (c.data.format == "synthetic") {
    const auto parts =
        c.model.kind == "least_squares"
            ? training::makeSyntheticLeastSquares(shards, c.data.synthetic_samples, c.data.synthetic_dim,
                                                  c.data.synthetic_heterogeneity, c.data.seed)
            : training::makeSyntheticLogistic(shards, c.data.synthetic_samples, c.data.synthetic_dim,
                                              c.data.synthetic_heterogeneity, c.data.seed);
    auto [all, partition] = training::concatNodes(parts);
    p->train = std::move(all);
    p->setup.partition = std::move(partition);
  } else {
    training::DataSpec spec;
    spec.format = c.data.format;
    spec.train = c.data.train;
    spec.test = c.data.test;
    spec.train_labels = c.data.train_labels;
    spec.test_labels = c.data.test_labels;
    spec.label_column = c.data.label_column;
    spec.header = c.data.header;
    spec.scaling = c.data.scaling;
    spec.regression = c.data.regression;
    spec.limit = c.data.max_train;
    auto loaded = training::loadDataset(spec);
    p->train = std::move(loaded.train);
    p->test = std::move(loaded.test);
    p->setup.partition = training::partitionRows(
        p->train, shards, {.kind = c.data.partition, .dirichlet_alpha = c.data.dirichlet_alpha, .seed = c.data.seed});
  }

  training::ModelSpec ms;
  ms.kind = c.model.kind;
  if (ms.kind == "mlp")  // [model].hidden has a default for mlp; other kinds ignore it
    for (auto h : c.model.hidden) ms.hidden.push_back(static_cast<int>(h));
  ms.l1 = c.model.l1;
  ms.l2 = c.model.l2;
  p->model = training::makeModel(ms, p->train.features(), p->train.classes);
  p->compressor = compress::makeCompressor(c.compressor);

  sim::SimSetup& s = p->setup;
  s.model = p->model.get();
  s.train = &p->train;
  s.test = p->test ? &*p->test : nullptr;
  s.reference = convex(c.model.kind) &&
                static_cast<double>(p->train.samples()) * static_cast<double>(p->model->dim()) <= kReferenceMaxEntries;
  s.algorithm.name = c.algorithm.name;
  s.algorithm.eta = c.algorithm.eta;
  s.algorithm.gamma = c.algorithm.gamma;
  s.algorithm.alpha = c.algorithm.alpha;
  s.algorithm.beta = c.compressor_beta;
  s.compressor = p->compressor.get();
  s.estimator = {.kind = c.algorithm.estimator, .batch = c.algorithm.batch, .lsvrg_p = c.algorithm.lsvrg_p};
  s.lr = lrSchedule(c.algorithm);
  s.local = localSchedule(c.algorithm);
  s.initial_nodes = c.cluster.nodes;
  s.topology = topologyParams(c.cluster);
  s.weights = weightRule(c.cluster);
  s.drop = c.faults.drop;
  for (const auto& e : c.faults.crash) s.crashes.push_back({e.node, e.round});
  for (const auto& e : c.faults.join) s.joins.push_back({e.node, e.round});
  s.rounds = c.algorithm.rounds;
  s.eval_every = c.sim.eval_every;
  s.eval_test_max = c.sim.eval_test_max;
  s.seed = c.cluster.seed;
  s.threads = c.sim.threads;
  return p;
}

}  // namespace gossip::daemon
