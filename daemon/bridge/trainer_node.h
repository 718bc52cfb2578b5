#pragma once
// The node of a daemon that serves a trainer (trainer.enable, docs/trainer.md): the configured method on
// the trainer's parameter vector, with gradients from the trainer (training/external_gradient.h) instead
// of a built-in model and data set.
#include <memory>

#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "daemon/config/config.h"
#include "training/external_gradient.h"

namespace gossip::daemon {

// x0 is the initial model (the first trainer's parameters, or a placeholder of the right size that a
// checkpoint overwrites), moved into the method's x; `gradient` receives the estimator the node owns, for the
// runtime to feed.
std::unique_ptr<algo::Node> makeTrainerNode(const Config& c, PeerId id, Incarnation inc, training::Vec x0,
                                            const compress::Compressor& compressor, training::ExternalGradient*& gradient);

}  // namespace gossip::daemon
