#include "daemon/node/sim_setup.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string_view>

#include "core/error.h"
#include "daemon/config/memory_estimate.h"
#include "sim/max_gossip.h"
#include "training/data_loader.h"
#include "training/model_factory.h"
#include "training/partition.h"
#include "training/reference_solver.h"
#include "training/scaling.h"
#include "training/synthetic.h"

namespace gossip::daemon {
namespace {

// The centralized reference solve runs full-batch FISTA to machine precision: only affordable on small
// convex problems (it is what `suboptimality` and `rel_error` are measured against).
constexpr double kReferenceMaxEntries = 2e6;

bool convex(const std::string& kind) { return kind != "mlp"; }

// data.train may name one file per node: "{id}" in the path (and in data.train_labels for IDX) is replaced
// by the node id, and node i trains on exactly its own file (DESIGN.md: a node may be given its own data).
constexpr std::string_view kNodePlaceholder = "{id}";

std::string withId(std::string path, PeerId id) {
  for (auto at = path.find(kNodePlaceholder); at != std::string::npos; at = path.find(kNodePlaceholder))
    path.replace(at, kNodePlaceholder.size(), std::to_string(id));
  return path;
}

// Loads every node's file, stacks them with one partition cell per node, and fits the feature scaling on
// the union so that all nodes (and the test set) share one coordinate system.
void loadNodeFiles(training::DataSpec spec, int shards, SimProblem& p) {
  const std::string scaling = spec.scaling;
  const std::string trainPattern = spec.train, labelPattern = spec.train_labels, testPath = spec.test;
  spec.scaling = "none";
  spec.check_labels = false;  // one node's file may lack a class; the union is checked below
  std::vector<training::Dataset> parts;
  for (int i = 0; i < shards; ++i) {
    spec.train = withId(trainPattern, static_cast<PeerId>(i));
    spec.train_labels = withId(labelPattern, static_cast<PeerId>(i));
    if (i > 0) spec.test.clear();  // the shared test set is read once
    auto loaded = training::loadDataset(spec);
    if (!parts.empty() && loaded.train.features() != parts.front().features())
      throw DataError(spec.train + ": " + std::to_string(loaded.train.features()) + " features, but node 0's file has " +
                      std::to_string(parts.front().features()));
    if (i == 0) p.test = std::move(loaded.test);
    parts.push_back(std::move(loaded.train));
  }
  auto [all, partition] = training::concatNodes(parts);
  if (!spec.regression)
    training::checkLabels(all, withId(trainPattern, 0) + " (and the other nodes' files)", p.test ? &*p.test : nullptr,
                          testPath);
  if (p.test) all.classes = p.test->classes = std::max(all.classes, p.test->classes);
  const auto scaler = training::Scaler::fit(all, training::parseScaling(scaling));
  scaler.apply(all);
  if (p.test) scaler.apply(*p.test);
  p.train = std::move(all);
  p.setup.partition = std::move(partition);
}

// A classifier without regularisation has no finite optimum on separable data (the loss tends to 0 as
// ||x|| grows), and the reference solve would run to its iteration limit for minutes and report rel.err 1.
bool noFiniteOptimumPossible(const Config& c) {
  return (c.model.kind == "logistic" || c.model.kind == "softmax") && c.model.l2 == 0 && c.model.l1 == 0;
}

// The [data] section as the loader's spec (files, format and scaling; the features and classes are
// inferred).
training::DataSpec dataSpec(const Config& c) {
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
  return spec;
}

// A bounded solve on the pooled data (separability does not depend on how samples are weighted); when it
// finds no optimum, run without suboptimality/rel_error and say why on stderr.
void checkOptimumExists(const SimProblem& p, bool& reference) {
  std::vector<std::uint32_t> rows(p.train.samples());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::uint32_t>(i);
  const training::Shard all{&p.train, rows};
  const auto r = training::solveReference(*p.model, std::span(&all, 1),
                                          {.max_iters = 5000, .max_seconds = 5.0});
  if (training::referenceFound(r)) return;
  reference = false;
  std::fprintf(stderr,
               "gossipd sim: warning: reference optimum not found (data may be separable; set model.l2 > 0); "
               "running without suboptimality/rel_error\n");
}

}  // namespace

namespace {
// Keeps node `only.id`'s rows of a problem loaded whole, and its test set when only.keep_test.
void cutToNode(SimProblem& p, const OneNode& only) {
  auto& cells = p.setup.partition;
  const std::vector<std::uint32_t> mine = cells.at(only.id);
  training::Dataset own;
  own.classes = p.train.classes;
  own.X.resize(static_cast<Eigen::Index>(mine.size()), p.train.X.cols());
  for (std::size_t k = 0; k < mine.size(); ++k) {
    own.X.row(static_cast<Eigen::Index>(k)) = p.train.X.row(mine[k]);
    if (!p.train.y.empty()) own.y.push_back(p.train.y[mine[k]]);
    if (!p.train.targets.empty()) own.targets.push_back(p.train.targets[mine[k]]);
  }
  p.train = std::move(own);
  std::vector<std::uint32_t> rows(p.train.samples());
  std::iota(rows.begin(), rows.end(), 0u);
  for (auto& cell : cells) cell.clear();
  cells.at(only.id) = std::move(rows);
  if (!only.keep_test) p.test.reset();
}

// algorithm.lr_auto: each initial node bounds the smoothness of its own shard, the nodes agree on the
// largest bound by max-gossip over the round-0 graph (only neighbours' numbers are read), and every node
// takes the step of that bound. A node joining later adopts the agreed step.
// A daemon runs the same function on the whole training set before it keeps its own rows: its shard, like
// every other node's, is a pure function of the config and the files every node reads (partition seed,
// scaling fitted on all rows), so each daemon computes every node's bound and all end with the same step,
// bit for bit the simulator's, without a message. Data that only its node can read would need the
// max-gossip to run over the wire; that is not built.
AutoStep agreeOnStep(const Config& c, const SimProblem& p) {
  const std::uint32_t n = c.cluster.nodes;
  std::vector<PeerId> ids(n);
  std::iota(ids.begin(), ids.end(), PeerId{0});
  const topology::Graph g = topology::buildGraph(ids, p.setup.topology);
  std::vector<training::Smoothness> bound(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto s = training::smoothness(*p.model, p.train, p.setup.partition.at(i));
    GOSSIP_CHECK(s.has_value(), "lr_auto was validated against model.kind");
    bound[i] = *s;
  }
  AutoStep a;
  a.gossip_rounds = sim::agreeByMaxGossip(g, bound, training::largest);
  a.agreed = bound.front();
  for (const auto& b : bound)
    GOSSIP_CHECK(b == a.agreed, "max-gossip ended without agreement (disconnected graph?)");
  a.lr = training::autoStep(a.agreed, c.algorithm.estimator);
  a.nodes = n;
  return a;
}
}  // namespace

namespace {
training::ModelSpec modelSpecOf(const Config& c) {
  training::ModelSpec ms;
  ms.kind = c.model.kind;
  if (ms.kind == "mlp")  // [model].hidden has a default for mlp; other kinds ignore it
    for (auto h : c.model.hidden) ms.hidden.push_back(static_cast<int>(h));
  ms.l1 = c.model.l1;
  ms.l2 = c.model.l2;
  return ms;
}

// One encoded message of a dim-value model, as the configured codec makes it.
double messageBytes(const Config& c, std::size_t dim) {
  return static_cast<double>(compress::makeCompressor(c.compressor)->encodedBytes(static_cast<std::uint32_t>(dim)));
}
}  // namespace

std::unique_ptr<SimProblem> buildSimProblem(const Config& c, const OneNode* only) {
  auto p = std::make_unique<SimProblem>();
  std::size_t totalRows = 0;  // training rows of the whole problem (the node's shard may be all we hold)
  std::optional<training::Scaler> trainScaler;  // as fitted on the training file (not for synthetic/per-node data)
  PeerId maxId = c.cluster.nodes - 1;
  // With lr_auto a daemon loads every node's rows first (the step needs every shard's bound) and keeps
  // its own after agreeOnStep.
  const bool cutLate = only != nullptr && c.algorithm.lr_auto;
  for (const auto& j : c.faults.join) maxId = std::max(maxId, j.node);
  const int shards = static_cast<int>(maxId) + 1;  // one partition cell per node id
  bool checked = false;  // the memory estimate was checked before the data was allocated
  // data.shards: the data is cut into fewer parts, node i trains on part i mod parts.
  const int dataParts = c.data.shards > 0 ? std::min(shards, static_cast<int>(c.data.shards)) : shards;
  if (dataParts < shards && c.data.train.find(kNodePlaceholder) != std::string::npos)
    throw ConfigError("data.shards: the nodes' own files (data.train with {node}) are one shard each; leave it 0");

  if (c.data.format == "synthetic") {
    // Checked before the shards are generated: their size grows with the largest node id.
    const double synthetic_bytes = 4.0 * dataParts * c.data.synthetic_samples * (c.data.synthetic_dim + 1.0);
    const int classes = c.model.kind == "least_squares" ? 0 : 2;  // what the generators below make
    const std::size_t dim = training::makeModel(modelSpecOf(c), c.data.synthetic_dim, classes)->dim();
    p->memory = estimateSimMemory(c, dim, c.data.synthetic_samples, messageBytes(c, dim), synthetic_bytes);
    checkSimMemory(c, p->memory, memAvailableBytes());
    checked = true;
    const auto parts =
        c.model.kind == "least_squares"
            ? training::makeSyntheticLeastSquares(dataParts, c.data.synthetic_samples, c.data.synthetic_dim,
                                                  c.data.synthetic_heterogeneity, c.data.seed)
            : training::makeSyntheticLogistic(dataParts, c.data.synthetic_samples, c.data.synthetic_dim,
                                              c.data.synthetic_heterogeneity, c.data.seed);
    auto [all, partition] = training::concatNodes(parts);
    p->train = std::move(all);
    p->setup.partition = training::repeatShards(std::move(partition), static_cast<std::size_t>(shards));
    totalRows = p->train.samples();
    if (only && !cutLate) cutToNode(*p, *only);
  } else {
    training::DataSpec spec = dataSpec(c);
    const training::PartitionSpec partitionSpec{
        .kind = c.data.partition, .dirichlet_alpha = c.data.dirichlet_alpha, .seed = c.data.seed};
    if (c.data.train.find(kNodePlaceholder) != std::string::npos) {
      loadNodeFiles(spec, shards, *p);
      totalRows = p->train.samples();
      if (only && !cutLate) cutToNode(*p, *only);
    } else if (only && !cutLate) {
      if (!only->keep_test) spec.test.clear();
      training::Partition partition;
      auto loaded = training::loadDatasetRows(
          spec,
          [&](const training::Dataset& labels) {
            partition = training::repeatShards(training::partitionRows(labels, dataParts, partitionSpec),
                                               static_cast<std::size_t>(shards));
            return partition.at(only->id);
          },
          /*test_max=*/0);
      totalRows = loaded.train_rows_total;
      trainScaler = loaded.scaler;
      p->train = std::move(loaded.train);
      p->test = std::move(loaded.test);
      // The node's rows are now rows 0..k-1 of p->train; the other nodes' cells are empty.
      std::vector<std::uint32_t> rows(p->train.samples());
      std::iota(rows.begin(), rows.end(), 0u);
      for (auto& cell : partition) cell.clear();
      partition.at(only->id) = std::move(rows);
      p->setup.partition = std::move(partition);
    } else {
      // Before the load (7 s for Fashion-MNIST): idx files' headers and labels give the data's and the
      // model's size, so a run that cannot fit is refused at once, its data counted.
      if (const auto shape = training::peekDataShape(spec)) {
        const std::size_t dim = training::makeModel(modelSpecOf(c), shape->features, shape->classes)->dim();
        p->memory = estimateSimMemory(c, dim, static_cast<double>(shape->train_rows) / dataParts,
                                      messageBytes(c, dim), shape->bytes());
        checkSimMemory(c, p->memory, memAvailableBytes());
        checked = true;
      }
      auto loaded = training::loadDataset(spec);
      trainScaler = loaded.scaler;
      p->train = std::move(loaded.train);
      p->test = std::move(loaded.test);
      p->setup.partition = training::repeatShards(training::partitionRows(p->train, dataParts, partitionSpec),
                                                  static_cast<std::size_t>(shards));
      totalRows = p->train.samples();
    }
  }
  // data.max_test: the first rows of the test set (it was parsed and documented, and ignored; issue 28).
  if (p->test && c.data.max_test > 0 && p->test->samples() > c.data.max_test)
    p->test = training::headOf(*p->test, static_cast<std::size_t>(c.data.max_test));

  if (!c.algorithm.distill_reference.empty()) {
    // Codistillation's reference rows: read like the training file, scaled with the training rows' scaler.
    if (!trainScaler) throw ConfigError("algorithm.distill_reference needs one data.train file (idx, csv or libsvm)");
    training::DataSpec rs = dataSpec(c);
    rs.train = c.algorithm.distill_reference;
    rs.test.clear();
    rs.train_labels.clear();  // derived from its name, as for data.train without train_labels
    rs.test_labels.clear();
    rs.scaling = "none";      // the training rows' scaler is applied below
    rs.features = p->train.features();
    rs.limit = c.algorithm.distill_reference_rows;
    rs.check_labels = false;  // its labels are not used
    training::LoadedData loaded;
    try {
      loaded = training::loadDataset(rs);
    } catch (const ConfigError& e) {  // the loader names data.* keys; say which file it was
      throw ConfigError("algorithm.distill_reference (" + rs.train + "): " + e.what());
    } catch (const DataError& e) {
      throw DataError("algorithm.distill_reference (" + rs.train + "): " + e.what());
    }
    if (loaded.train.features() != p->train.features())
      throw DataError("algorithm.distill_reference: " + std::to_string(loaded.train.features()) +
                      " features, the training data has " + std::to_string(p->train.features()));
    trainScaler->apply(loaded.train);
    p->distill_reference = std::move(loaded.train);
  }

  p->model = training::makeModel(modelSpecOf(c), p->train.features(), p->train.classes);
  if (!checked) {  // text formats (their size is known once parsed) and a daemon's own rows: the data is in
    p->memory = estimateSimMemory(c, p->model->dim(), static_cast<double>(totalRows) / dataParts,
                                  messageBytes(c, p->model->dim()), 0.0);
    checkSimMemory(c, p->memory, memAvailableBytes());
  }
  p->compressor = compress::makeCompressor(c.compressor);

  sim::SimSetup& s = p->setup;
  s.model = p->model.get();
  s.train = &p->train;
  s.test = p->test ? &*p->test : nullptr;
  // A single node holds only its rows: it has no centralized reference to compare against.
  s.reference = only == nullptr && convex(c.model.kind) &&
                static_cast<double>(totalRows) * static_cast<double>(p->model->dim()) <= kReferenceMaxEntries;
  if (s.reference && noFiniteOptimumPossible(c)) checkOptimumExists(*p, s.reference);
  s.algorithm = algorithmParams(c);
  if (p->distill_reference) {
    s.distill_reference = &*p->distill_reference;
    s.algorithm.distill_reference_values =
        p->distill_reference->samples() * static_cast<std::size_t>(p->train.classes);
  }
  s.compressor = p->compressor.get();
  s.estimator = {.kind = c.algorithm.estimator, .batch = c.algorithm.batch, .lsvrg_p = c.algorithm.lsvrg_p};
  s.topology = topologyParams(c.cluster);
  if (c.algorithm.lr_auto) {
    p->auto_step = agreeOnStep(c, *p);
    if (cutLate) {
      cutToNode(*p, *only);
      s.test = p->test ? &*p->test : nullptr;  // the cut may have dropped the test set
    }
    AlgorithmConfig a = c.algorithm;
    a.lr = p->auto_step->lr;
    s.lr = lrSchedule(a);
  } else {
    s.lr = lrSchedule(c.algorithm);
  }
  s.local = localSchedule(c.algorithm);
  s.initial_nodes = c.cluster.nodes;
  s.weights = weightRule(c.cluster);
  s.drop = c.faults.drop;
  for (const auto& e : c.faults.crash) s.crashes.push_back({e.node, e.round});
  for (const auto& e : c.faults.join) s.joins.push_back({e.node, e.round});
  s.rounds = c.algorithm.rounds;
  s.final_consensus_rounds = c.algorithm.final_consensus_rounds;
  s.final_consensus_codec = c.algorithm.final_consensus_codec;
  s.eval_every = c.sim.eval_every;
  s.eval_test_max = c.sim.eval_test_max;
  s.seed = c.cluster.seed;
  s.threads = c.sim.threads;
  return p;
}

}  // namespace gossip::daemon
