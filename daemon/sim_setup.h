#pragma once
// Turns a parsed Config into everything the simulator needs: the data (loaded or synthetic), the
// partition, the model, the compressor and the schedules. The objects live in SimProblem, which must
// outlive the Simulator that points into it.
#include <memory>
#include <optional>

#include "compressors/compressor.h"
#include "daemon/config.h"
#include "sim/simulator.h"
#include "training/dataset.h"
#include "training/model.h"

namespace gossip::daemon {

struct SimProblem {
  training::Dataset train;
  std::optional<training::Dataset> test;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> compressor;
  sim::SimSetup setup;  // points into the members above
};

// ConfigError / DataError on bad configuration or data.
std::unique_ptr<SimProblem> buildSimProblem(const Config& config);

}  // namespace gossip::daemon
