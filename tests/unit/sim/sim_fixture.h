#pragma once
// A small synthetic L1-logistic problem for simulator tests.
#include <memory>
#include <string>

#include "compressors/compressor.h"
#include "sim/simulator.h"
#include "training/model_factory.h"
#include "training/synthetic.h"

namespace gossip::testing {

// Owns everything a SimSetup points to.
struct Fixture {
  training::Dataset data;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  sim::SimSetup setup;

  Fixture(int shards, const std::string& algorithm, compress::CompressorSpec spec, double l1 = 0.005,
          double l2 = 0.01) {
    auto [all, partition] = training::concatNodes(training::makeSyntheticLogistic(shards, 50, 20, 1.0, 3));
    data = std::move(all);
    model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = l1, .l2 = l2}, data.features(), data.classes);
    comp = compress::makeCompressor(spec);
    setup.model = model.get();
    setup.train = &data;
    setup.partition = std::move(partition);
    setup.reference = true;
    setup.algorithm.name = algorithm;
    setup.algorithm.alpha = 0.5;
    setup.algorithm.gamma = 1.0;
    setup.algorithm.eta = 0.5;
    setup.compressor = comp.get();
    setup.estimator = {.kind = "full"};
    setup.lr.kind = "constant";
    setup.lr.lr = 0.5;
    setup.initial_nodes = 8;
    setup.topology.kind = topology::Kind::Ring;
    setup.rounds = 1500;
    setup.eval_every = 500;
  }
};

}  // namespace gossip::testing
