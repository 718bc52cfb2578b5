#include "daemon/node/trainer_input.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <span>
#include <string>

#include "core/error.h"
#include "daemon/bridge/trainer_node.h"
#include "daemon/node/model_out.h"

namespace gossip::daemon {
namespace fs = std::filesystem;

TrainerInput::TrainerInput(const Config& c, PeerId id, Incarnation incarnation, fs::path dataDir,
                           logging::Loggers& loggers, std::function<std::uint64_t()> nowMs, const std::atomic<bool>& stop)
    : c_(c), id_(id), dir_(std::move(dataDir)), log_(loggers.get("node")), nowMs_(std::move(nowMs)), stop_(stop) {
  TrainerBridgeOptions o;
  o.data_dir = dir_;
  o.gradient_mode = c.trainer.mode == "gradient";
  o.node = id;
  o.nodes = c.cluster.nodes;
  o.algorithm = c.algorithm.name;
  o.rounds = c.algorithm.rounds;
  o.checkpoint_every = c.node.checkpoint_every;
  o.idle_timeout_ms = c.trainer.idle_timeout_ms;
  o.copy_threads = c.trainer.copy_threads;
  o.log = loggers.get("bridge");
  bridge_ = std::make_unique<TrainerBridge>(o);
  compressor_ = compress::makeCompressor(c.compressor);
  training::ExternalGradient* unused = nullptr;
  (void)makeTrainerNode(c, id, incarnation, training::Vec::Zero(1), *compressor_, unused);
}

bool TrainerInput::start(bool haveCheckpoint) {
  unsigned long long dim = 0;
  if (std::ifstream in(dir_ / "trainer_dim"); in) in >> dim;
  // The layout the first trainer named (absent in a directory from before layouts: then any is taken).
  if (std::ifstream in(dir_ / kLayoutFile, std::ios::binary); in) {
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ModelLayout layout;
    if (const auto bad = parseLayoutFile(text, layout))
      throw IoError("'" + (dir_ / kLayoutFile).string() + "' is damaged (" + *bad +
                    "); restore it, or delete it to accept any trainer with the model's size");
    bridge_->setLayout(std::move(layout));
  }
  if (dim > 0 && haveCheckpoint) {
    x0_ = training::Vec::Zero(static_cast<Eigen::Index>(dim));
    placeholder_ = true;
    return true;
  }
  return waitForModel();
}

bool TrainerInput::waitForModel() {
  log_->info("waiting for a trainer to attach at {} (docs/trainer.md)", bridge_->endpoint());
  for (std::uint64_t note = nowMs_() + 30000;;) {
    if (stop_) return false;
    const std::uint64_t now = nowMs_();
    bridge_->poll(now, nullptr, 0);
    if (auto x = bridge_->takeInitial()) {
      x0_ = std::move(*x);
      placeholder_ = false;
      const std::string text = std::to_string(x0_.size()) + "\n";
      writeFileAtomic(dir_ / "trainer_dim", std::as_bytes(std::span(text)));
      if (const auto& layout = bridge_->layout()) {  // also model.npy's index: each tensor's name, shape, offset
        const std::string index = layoutFileText(*layout);
        writeFileAtomic(dir_ / kLayoutFile, std::as_bytes(std::span(index)));
      }
      return true;
    }
    if (now >= note) {
      log_->info("still waiting for a trainer at {}", bridge_->endpoint());
      note = now + 30000;
    }
    bridge_->waitReadable(100);
  }
}

std::string TrainerInput::layoutIdentity() const {
  const auto& layout = bridge_->layout();
  return layout ? layout->identityValue() : std::string();
}

std::unique_ptr<algo::Node> TrainerInput::makeNode(Incarnation incarnation) {
  // The trainer's parameters (or a checkpoint's placeholder) are moved into the node, not copied: with a
  // large model the start held them twice beside the method's other state (results §23). Later engines (a
  // rejoin) load their state into a node of the same size.
  training::Vec x0;
  if (x0_.size() > 0)
    x0.swap(x0_);
  else
    x0 = training::Vec::Zero(dim_);
  dim_ = x0.size();
  return makeTrainerNode(c_, id_, incarnation, std::move(x0), *compressor_, grad_);
}

void TrainerInput::ready(const training::Vec& x, Round round) {
  bridge_->ready(x, round);
  x0_ = training::Vec();  // normally moved into the node already (makeNode)
}

bool TrainerInput::roundEnded(const training::Vec& x, Round next, bool done) {
  const bool served = bridge_->finishRound(x, next, done);
  // The round's apply ran: its gradient is not read again. A consensus round supplied one it never took.
  if (grad_) grad_->releaseShared();
  return served;
}

// Model mode: the trainer's parameters become x and the gradient is zero. Gradient mode: its gradient (at
// the x the bridge last gave it) is the round's gradient; a method with a start step first moves x and
// asks again. No trainer attached: the node follows, never leads (docs/trainer.md): it begins t with a
// zero gradient only once a neighbour has, so a cluster whose trainers are all gone pauses instead of
// running its rounds out.
bool TrainerInput::input(engine::LinkedEngine& engine, Round t, std::uint64_t now) {
  auto& node = engine.node();
  waiting_ = false;
  if (bridge_->hasRequest() && !bridge_->trainerCurrent()) {
    // Computed from a model the node no longer has: hand over the current one, no round.
    bridge_->resync(node.algorithm().x(), t);
    return false;
  }
  if (bridge_->hasRequest()) {
    // Model mode reads only the parameters: the gradient buffer (d values) is never made there. Gradient mode
    // reads a float32 trainer's gradient where it lies (sharedGradient): no buffer and no copy either.
    const bool gradientMode = c_.trainer.mode == "gradient";
    auto shared = gradientMode ? bridge_->sharedGradient() : std::nullopt;
    training::Vec unused;
    const double loss = bridge_->readRequest(node.algorithm().x(), gradientMode && !shared ? grad_->buffer() : unused);
    if (!std::isnan(loss)) loss_ = loss;
    if (!gradientMode) {
      grad_->supplyZero(loss_);
      return true;
    }
    if (shared)
      grad_->supplyShared(shared->data, std::move(shared->keep), loss_);
    else
      grad_->supply(loss_);
    if (!node.needsStartStep(t)) return true;
    node.startStep(t);
    bridge_->askGradientAt(node.algorithm().x(), t);
    return false;
  }
  if (bridge_->attached(now)) {
    waiting_ = true;
    return false;
  }
  if (!engine.neighbourAt(t)) return false;
  grad_->supplyZero(loss_);
  if (node.needsStartStep(t)) {
    node.startStep(t);
    grad_->supplyZero(loss_);
  }
  return true;
}

}  // namespace gossip::daemon
