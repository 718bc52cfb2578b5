#pragma once
// The small problem of the protocol tests (tests/unit/engine/test_links.cc, protocol_harness.cc,
// tests/unit/daemon/test_node_inprocess.cc): a synthetic logistic regression, 30 rows of 10 features per
// node (seed 5), L2 0.01, and one compressor; and its nodes (full gradients, step 0.2). Header-only: its
// users link algorithms, training and compressors.
#include <cstdint>
#include <memory>

#include <string>

#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "training/estimators.h"
#include "training/dataset.h"
#include "training/model.h"
#include "training/model_factory.h"
#include "training/partition.h"
#include "training/synthetic.h"

namespace gossip::test_support {

struct LogisticProblem {
  training::Dataset data;
  training::Partition partition;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  LogisticProblem(std::uint32_t n, compress::CompressorSpec spec) {
    auto [all, part] = training::concatNodes(training::makeSyntheticLogistic(static_cast<int>(n), 30, 10, 1.0, 5));
    data = std::move(all);
    partition = std::move(part);
    model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = 0, .l2 = 0.01}, data.features(), data.classes);
    comp = compress::makeCompressor(spec);
  }

  // Node `id` (life `inc`) of `algorithm` from a zero model: CHOCO's consensus step 0.5, eta 0.8, full
  // gradients of its own shard, step 0.2.
  std::unique_ptr<algo::Node> makeNode(const std::string& algorithm, PeerId id, Incarnation inc) const {
    algo::AlgorithmParams ap;
    ap.name = algorithm;
    ap.gamma = algorithm == "choco" ? 0.5 : 1.0;
    ap.eta = 0.8;
    ap.incarnation = inc;
    const training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(model->dim()));
    auto est = training::makeEstimator({.kind = "full"}, *model, data, partition[id], 1);
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.2; };
    return std::make_unique<algo::Node>(id, algo::makeAlgorithm(ap, *comp, id, x0), std::move(est), sched);
  }
};

}  // namespace gossip::test_support
