#include "fuzz/engine_rig.h"

#include "fuzz/targets.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/synthetic.h"

namespace gossip::fuzz {

std::unique_ptr<engine::LinkedEngine> Rig::makeEngine(PeerId id, Incarnation inc, engine::Transport& t) {
  algo::AlgorithmParams ap;
  ap.name = "choco";
  ap.gamma = 0.5;
  ap.incarnation = inc;
  training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(model->dim()));
  auto a = algo::makeAlgorithm(ap, *comp, id, x0);
  auto est = training::makeEstimator({.kind = "full"}, *model, data, partition[id], 1);
  algo::NodeSchedule sched;
  sched.lr = [](Round) { return 0.2; };
  topology::TopologyParams ring;
  ring.kind = topology::Kind::Ring;
  return std::make_unique<engine::LinkedEngine>(
      id, inc, std::make_unique<algo::Node>(id, std::move(a), std::move(est), sched), t,
      engine::LinkOptions{.topology = ring, .retransmit_ms = 5, .hello_timeout_ms = 10, .hello_retry_ms = 2});
}

Rig::Rig() {
  auto [all, part] = training::concatNodes(training::makeSyntheticLogistic(2, 6, 5, 1.0, 7));
  data = std::move(all);
  partition = std::move(part);
  model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = 0, .l2 = 0.01}, data.features(), data.classes);
  comp = compress::makeCompressor({.name = "topk", .ratio = 0.5});
  engine::View view;
  for (PeerId id = 0; id < 2; ++id) {
    net.attach(id);
    transports[id] = std::make_unique<engine::InprocTransport>(net, id);
    engines[id] = makeEngine(id, 0, *transports[id]);
    drivers[id] = std::make_unique<engine::RoundDriver>(
        *engines[id], engine::RoundDriverOptions{.barrier = engine::StartBarrier::EveryRound});
    view.push_back({id, 0});
  }
  for (auto& [id, e] : engines) e->setMembers(view, 0, now);
  for (int k = 0; k < 10000 && (engines[0]->nextRound() < 3 || engines[1]->nextRound() < 3); ++k) {
    step(0);
    step(1);
    ++now;
  }
  if (engines[0]->nextRound() < 3 || engines[1]->nextRound() < 3) fail("rig", "the two engines did not reach round 3");
}

void Rig::step(PeerId id) {
  auto& d = *drivers.at(id);
  d.pump(now);
  d.step(now);
}

}  // namespace gossip::fuzz
