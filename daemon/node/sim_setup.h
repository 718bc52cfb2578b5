#pragma once
// Turns a parsed Config into everything the simulator needs: the data (loaded or synthetic), the
// partition, the model, the compressor and the schedules. The objects live in SimProblem, which must
// outlive the Simulator that points into it.
#include <memory>
#include <optional>

#include "compressors/compressor.h"
#include "daemon/config/config.h"
#include "daemon/config/memory_estimate.h"
#include "sim/simulator.h"
#include "training/dataset.h"
#include "training/model.h"
#include "training/smoothness.h"

namespace gossip::daemon {

// algorithm.lr_auto: what the nodes agreed on and the step it gave.
struct AutoStep {
  training::Smoothness agreed;  // the largest over the initial nodes
  double lr = 0.0;
  unsigned gossip_rounds = 0;   // max-gossip rounds until no node's value changed
  std::size_t nodes = 0;
};

struct SimProblem {
  training::Dataset train;
  std::optional<training::Dataset> test;
  std::optional<training::Dataset> distill_reference;  // codistill's reference rows, scaled like train
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> compressor;
  sim::SimSetup setup;  // points into the members above
  std::optional<AutoStep> auto_step;
  MemoryEstimate memory;  // what checkSimMemory was given (gossipd sim reports it beside the measured peak)
};

// What one daemon keeps: its own training rows and, with keep_test, the whole test set (it evaluates its
// last model on all of it; the periodic evaluations take a head, daemon/node/node_build.cc).
struct OneNode {
  PeerId id = 0;
  bool keep_test = true;
};

// ConfigError / DataError on bad configuration or data. With `only`, the problem holds that node's
// training rows alone (partition cell `only->id` lists them, the other cells are empty) and no
// centralized reference: IDX files are streamed so the whole training set is never in memory; per-node
// files ("{id}") and other formats are read whole (scaling is fitted on every row) and then cut.
std::unique_ptr<SimProblem> buildSimProblem(const Config& config, const OneNode* only = nullptr);

}  // namespace gossip::daemon
