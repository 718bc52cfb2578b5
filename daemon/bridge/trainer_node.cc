#include "daemon/bridge/trainer_node.h"

#include <algorithm>

namespace gossip::daemon {

std::unique_ptr<algo::Node> makeTrainerNode(const Config& c, PeerId id, Incarnation inc, training::Vec x0,
                                            const compress::Compressor& compressor, training::ExternalGradient*& gradient) {
  algo::AlgorithmParams p = algorithmParams(c);
  p.l1 = c.model.l1;
  p.incarnation = inc;
  auto est = std::make_unique<training::ExternalGradient>(x0.size());
  auto algorithm = algo::makeAlgorithm(p, compressor, id, std::move(x0));
  gradient = est.get();
  algo::NodeSchedule sched;
  sched.lr = [lr = lrSchedule(c.algorithm)](Round t) { return lr.value(t); };
  // Local steps are the trainer's business in model mode and refused in gradient mode (config check).
  sched.localSteps = [](Round) { return 1u; };
  sched.l1 = c.model.l1;
  if (c.algorithm.final_consensus_rounds > 0) sched.consensus_from = c.algorithm.rounds - c.algorithm.final_consensus_rounds;
  sched.consensus_codec = c.algorithm.final_consensus_codec;
  return std::make_unique<algo::Node>(id, std::move(algorithm), std::move(est), std::move(sched));
}

}  // namespace gossip::daemon
