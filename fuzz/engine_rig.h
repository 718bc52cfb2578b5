#pragma once
// Two linked-mode engines (the daemon's protocol) training CHOCO + top-k on a tiny logistic problem over
// the in-process network, brought to the point where both edges are open and rounds flow. The engine and
// checkpoint targets start from it for every input.
#include <map>
#include <memory>

#include "compressors/compressor.h"
#include "engine/linked_engine.h"
#include "engine/round_driver.h"
#include "training/dataset.h"
#include "training/model.h"
#include "training/partition.h"
#include "transport/inproc/inproc.h"

namespace gossip::fuzz {

struct Rig {
  Rig();
  // One cooperative step of node `id` through its round driver (the daemon's policy: the start barrier in
  // every round): take frames, run timers, begin or end a round when it can.
  void step(PeerId id);
  // A fresh engine for node 0 (same problem and configuration), for loading checkpoints into.
  std::unique_ptr<engine::LinkedEngine> makeEngine(PeerId id, Incarnation inc, engine::Transport& t);

  training::Dataset data;
  training::Partition partition;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  engine::InprocNetwork net;
  std::map<PeerId, std::unique_ptr<engine::InprocTransport>> transports;
  std::map<PeerId, std::unique_ptr<engine::LinkedEngine>> engines;
  std::map<PeerId, std::unique_ptr<engine::RoundDriver>> drivers;
  std::uint64_t now = 0;
};

}  // namespace gossip::fuzz
