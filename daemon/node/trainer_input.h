#pragma once
// TrainerInput (trainer.enable, docs/trainer.md): a trainer process drives the node's rounds through the
// bridge (daemon/bridge/trainer_bridge.h). This holds the node's side of it: the bridge, the method's
// codec (there is no SimProblem in trainer mode), the first model (from the first trainer that attaches,
// its size kept in data_dir/trainer_dim and its layout in data_dir/model_layout.json, or a placeholder of
// that size a checkpoint overwrites), the gradient the node's estimator reads, and the decision, each time
// a round could begin, whether the trainer's input is there.
//
// Threading: node thread only (the bridge's copy workers are started and joined inside its calls).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>

#include "algorithms/node.h"
#include "compressors/compressor.h"
#include "daemon/bridge/trainer_bridge.h"
#include "daemon/config/config.h"
#include "daemon/log/log.h"
#include "engine/linked_engine.h"
#include "training/external_gradient.h"

namespace gossip::daemon {

class TrainerInput {
 public:
  // Starts the bridge and checks the method on a throwaway node (e.g. LEAD refusing a biased compressor),
  // so that a bad config fails now and not after a trainer attached. ConfigError/IoError.
  TrainerInput(const Config& c, PeerId id, Incarnation incarnation, std::filesystem::path dataDir,
               logging::Loggers& loggers, std::function<std::uint64_t()> nowMs, const std::atomic<bool>& stop);

  // The first model: a placeholder of the size in trainer_dim when a checkpoint may hold the model,
  // otherwise the first trainer's. False when a stop signal came before any trainer did.
  bool start(bool haveCheckpoint);
  // Blocks (polling the bridge) until a trainer gives its parameters; false on a stop signal.
  bool waitForModel();
  bool placeholder() const { return placeholder_; }
  // The model's layout for the cluster identity (ModelLayout::identityValue; empty while unknown).
  std::string layoutIdentity() const;
  // data_dir's layout file: written at the first trainer's init, read back on every restart.
  static constexpr const char* kLayoutFile = "model_layout.json";

  // A node for the engine: the first model, or (later lives) a zero model of its size that the caller
  // loads a state into.
  std::unique_ptr<algo::Node> makeNode(Incarnation incarnation);
  // The node holds the model: tell the bridge, and forget the first model (later lives load theirs).
  void ready(const training::Vec& x, Round round);

  // Whether round t may begin as far as the trainer goes; if so its input is in the node.
  bool input(engine::LinkedEngine& engine, Round t, std::uint64_t now);
  // Round t ended with x: the trainer gets x (TrainerBridge::finishRound, whose result this returns), and the
  // node lets go of a gradient it read in the trainer's shared memory, so that nothing of the daemon's maps
  // the region after the last round (the trainer exiting then would charge it all to the daemon).
  bool roundEnded(const training::Vec& x, Round next, bool done);
  // The last call to input() found a trainer attached but not yet asking (the loop then waits on it).
  bool waiting() const { return waiting_; }

  TrainerBridge& bridge() { return *bridge_; }

 private:
  const Config& c_;
  const PeerId id_;
  std::filesystem::path dir_;
  logging::Logger log_;
  std::function<std::uint64_t()> nowMs_;
  const std::atomic<bool>& stop_;
  std::unique_ptr<TrainerBridge> bridge_;
  std::unique_ptr<compress::Compressor> compressor_;
  training::Vec x0_;                         // the first trainer's parameters, or a checkpoint's placeholder
  Eigen::Index dim_ = 0;                     // its size, once the first engine holds the model
  bool placeholder_ = false;                 // x0_ only has the right size; a checkpoint holds the model
  training::ExternalGradient* grad_ = nullptr;  // owned by the node; the bridge's gradients go here
  bool waiting_ = false;
  double loss_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace gossip::daemon
