// The round driver (engine/round_driver.h) on linked-mode engines over the in-process network: what its
// steps report, the trainer hook, the stateless deadline, and the start barrier, which must hold a replica
// round back in every round (not only round 0) while a view neighbour's edge is not agreed.
#include <doctest/doctest.h>

#include "compressors/compressor.h"
#include "engine/round_driver.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/synthetic.h"
#include "transport/inproc/inproc.h"

using namespace gossip;
using namespace gossip::engine;

namespace {

struct Ring {
  training::Dataset data;
  training::Partition partition;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  InprocNetwork net;
  std::map<PeerId, std::unique_ptr<InprocTransport>> transports;
  std::map<PeerId, std::unique_ptr<LinkedEngine>> engines;
  std::map<PeerId, std::unique_ptr<RoundDriver>> drivers;
  std::uint64_t now = 0;

  // Nodes 0..n-1 running `algorithm` on a ring, each with the view {0..n-1}.
  Ring(std::uint32_t n, const std::string& algorithm, RoundDriverOptions opts) {
    auto [all, part] = training::concatNodes(training::makeSyntheticLogistic(static_cast<int>(n) + 1, 20, 5, 1.0, 3));
    data = std::move(all);
    partition = std::move(part);
    model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = 0, .l2 = 0.01}, data.features(), data.classes);
    comp = compress::makeCompressor({.name = "topk", .ratio = 0.5});
    topology::TopologyParams ring;
    ring.kind = topology::Kind::Ring;
    for (PeerId id = 0; id < n; ++id) {
      algo::AlgorithmParams ap;
      ap.name = algorithm;
      ap.gamma = 0.5;
      training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(model->dim()));
      auto est = training::makeEstimator({.kind = "full"}, *model, data, partition[id], 1);
      algo::NodeSchedule sched;
      sched.lr = [](Round) { return 0.2; };
      net.attach(id);
      transports[id] = std::make_unique<InprocTransport>(net, id);
      engines[id] = std::make_unique<LinkedEngine>(
          id, 0, std::make_unique<algo::Node>(id, algo::makeAlgorithm(ap, *comp, id, x0), std::move(est), sched),
          *transports[id], LinkOptions{.topology = ring, .retransmit_ms = 20, .hello_timeout_ms = 50, .hello_retry_ms = 5});
      drivers[id] = std::make_unique<RoundDriver>(*engines[id], opts);
    }
    setView(n);
  }
  // Every node sees the members 0..m-1 (members without an engine never answer).
  void setView(std::uint32_t m) {
    View v;
    for (PeerId id = 0; id < m; ++id) v.push_back({id, 0});
    for (auto& [id, e] : engines) e->setMembers(v, e->nextRound(), now);
  }
  // `sweeps` passes over every node in id order, one millisecond each.
  void run(int sweeps) {
    for (int k = 0; k < sweeps; ++k, ++now)
      for (auto& [id, d] : drivers) {
        d->pump(now);
        d->step(now);
      }
  }
  Round highest() const {
    Round r = 0;
    for (const auto& [id, e] : engines) r = std::max(r, e->nextRound());
    return r;
  }
};

}  // namespace

TEST_CASE("round driver: a step begins - then ends - one round - Finished at the last") {
  Ring r(2, "choco", {.rounds = 2});
  auto& d = *r.drivers.at(0);
  RoundStep s;
  for (int k = 0; k < 1000 && s.event != RoundEvent::Began; ++k) {
    r.drivers.at(1)->pump(r.now);
    r.drivers.at(1)->step(r.now);
    d.pump(r.now);
    s = d.step(r.now++);
  }
  REQUIRE(s.event == RoundEvent::Began);
  CHECK(s.round == 0);
  CHECK(r.engines.at(0)->inRound());
  r.run(200);
  for (auto& [id, e] : r.engines) CHECK(e->nextRound() == 2);
  s = d.step(r.now);
  CHECK(s.event == RoundEvent::Finished);
  CHECK(s.round == 2);
}

TEST_CASE("round driver: the caller's hook holds a round until it agrees") {
  Ring r(2, "choco", {.rounds = 5});
  bool open = false;
  std::vector<Round> asked;
  r.drivers[0] = std::make_unique<RoundDriver>(*r.engines.at(0), RoundDriverOptions{.rounds = 5},
                                               [&](Round t, std::uint64_t) {
                                                 asked.push_back(t);
                                                 return open;
                                               });
  r.run(200);
  CHECK(r.highest() <= 1);  // node 1 begins round 0 and waits for node 0's frame
  CHECK(r.engines.at(0)->nextRound() == 0);
  REQUIRE(!asked.empty());
  CHECK(asked.back() == 0);
  open = true;
  r.run(200);
  for (auto& [id, e] : r.engines) CHECK(e->nextRound() == 5);
}

TEST_CASE("round driver: a stateless round mixes what it has at the deadline - and only with one") {
  for (const bool withDeadline : {false, true}) {
    CAPTURE(withDeadline);
    RoundDriverOptions o{.rounds = 3};
    if (withDeadline) o.roundTimeoutMs = 10;
    Ring r(2, "deepsqueeze", o);
    auto& d = *r.drivers.at(0);  // node 1 is never stepped: no frame of it comes
    std::vector<RoundStep> ended;
    for (int k = 0; k < 200; ++k, ++r.now) {
      d.pump(r.now);
      if (const auto s = d.step(r.now); s.event == RoundEvent::Ended) ended.push_back(s);
    }
    if (!withDeadline) {
      CHECK(ended.empty());  // waits for node 1's frame for ever
      continue;
    }
    REQUIRE(ended.size() == 3);
    for (const auto& s : ended) CHECK(s.deadline);
    CHECK(r.engines.at(0)->stats().messages_missing == 3);
  }
}

TEST_CASE("round driver: the stateless deadline counts from when the round waits - not from before its compute") {
  // A round whose begin took longer than the deadline (the step that began it was given the time before
  // the local steps and encoding): the round still waits the whole deadline once it is out.
  RoundDriverOptions o{.rounds = 3, .roundTimeoutMs = 10};
  Ring r(2, "deepsqueeze", o);
  auto& d = *r.drivers.at(0);  // node 1 is never stepped: no frame of it comes
  d.pump(0);
  REQUIRE(d.step(0).event == RoundEvent::Began);
  // The begin "took" 50 ms: the next step comes at 50, the first at which the node waits.
  for (std::uint64_t now = 50; now < 60; ++now) {
    d.pump(now);
    CHECK(d.step(now).event == RoundEvent::Waiting);
  }
  d.pump(60);
  const auto s = d.step(60);
  CHECK(s.event == RoundEvent::Ended);
  CHECK(s.deadline);
}

TEST_CASE("round driver: the start barrier holds replica rounds in every round - not only round 0") {
  // Three nodes train on a ring; at round 5 or later node 3 joins every view but never answers (its edges
  // with nodes 0 and 2 are never agreed). With the barrier, nodes 0 and 2 begin no round past the view
  // change. Without it they run on in the gaps between their unanswered proposals, mixing over the edges
  // they have: the behaviour that made a rejoining daemon run its rounds alone at compute speed.
  for (const auto barrier : {StartBarrier::EveryRound, StartBarrier::None}) {
    CAPTURE(static_cast<int>(barrier));
    Ring r(3, "choco", {.barrier = barrier});
    r.run(300);
    const Round before = r.highest();
    REQUIRE(before >= 5);
    r.setView(4);
    r.run(1000);
    if (barrier == StartBarrier::EveryRound) {
      for (const PeerId id : {PeerId{0}, PeerId{2}}) CHECK(r.engines.at(id)->nextRound() <= before + 1);
      CHECK(r.highest() <= before + 2);
    } else {
      CHECK(r.highest() > before + 20);
    }
  }
}
