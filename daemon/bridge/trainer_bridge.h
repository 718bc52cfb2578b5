#pragma once
// TrainerBridge: the daemon's end of the trainer protocol (docs/trainer.md). A trainer process on the same
// machine attaches over ZeroMQ (ROUTER at ipc://<data_dir>/trainer.sock, one JSON frame per message); the
// parameters and the gradient never travel in messages but sit in a shared-memory file the bridge creates
// per attach (/dev/shm, parameters then gradient, in the trainer's dtype). The attach names the tensors
// (daemon/bridge/model_layout.h); once the node has a model, an attach naming others is refused.
//
// The bridge only talks and copies; NodeRuntime decides when a round runs:
//   poll()          answers attach / init / report / detach at once, keeps a mix or grad request pending
//   hasRequest()    a trainer waits for a round: readRequest() moves its parameters (model mode) or its
//                   gradient (gradient mode) into the algorithm's state (core/real.h), one copy or
//                   conversion pass; a float32 trainer's gradient is read in place instead
//                   (sharedGradient(): no pass, no vector)
//   finishRound()   writes the mixed model back into the shared memory (one pass) and replies
// The passes are streaming and split over threads (daemon/bridge/param_copy.h), which is what brings a
// round of the bridge under two memcpys of the parameters (docs/results.md §10).
// Why shared memory and not the parameters inside the messages: a trainer's tensors can be views into the
// mapping, so a round costs the trainer no copy at all and the daemon one read and one write of the model
// (bench/trainer_bridge.sh measures both designs).
//
// Liveness: a socket monitor counts the trainer's connections; when the last one closes (the trainer
// exited or was killed) the trainer is detached. The socket and its monitor are a peer::RequestServer
// (transport/zmq/request_server.h): this bridge speaks the protocol and includes no ZeroMQ header. An attached trainer that sends nothing for
// idle_timeout_ms counts as detached until its next message. While a request waits for its round the
// bridge sends {"op":"wait"} every second, so the client can tell a slow round from a dead daemon.
// Not thread-safe: the runtime's thread drives it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/types.h"
#include "daemon/bridge/model_layout.h"
#include "daemon/log/log.h"
#include "training/dataset.h"

namespace gossip::daemon {

struct TrainerBridgeOptions {
  std::filesystem::path data_dir;
  bool gradient_mode = false;  // trainer.mode = "gradient"
  PeerId node = 0;
  std::uint32_t nodes = 1;     // cluster.nodes, so a trainer can take its shard of the data
  std::string algorithm;
  Round rounds = 0;
  Round checkpoint_every = 0;  // node.checkpoint_every: the client saves its optimizer's state on those rounds
  std::uint32_t idle_timeout_ms = 60000;
  std::uint32_t copy_threads = 0;  // threads for the parameter copies, 0 = the machine's cores up to 4
  logging::Logger log;             // attaches and detaches; null = none (the runtime passes "bridge")
};

struct TrainerStats {
  std::uint64_t attaches = 0;
  std::uint64_t rounds_served = 0;   // rounds begun from a trainer's request
  std::uint64_t copy_ns = 0;         // time in the shared-memory reads and writes (conversions included)
  std::uint64_t protocol_errors = 0; // requests answered with an error
};

class TrainerBridge {
 public:
  // Binds the socket; IoError if it cannot, ConfigError if data_dir makes the socket path too long.
  explicit TrainerBridge(TrainerBridgeOptions options);
  ~TrainerBridge();
  TrainerBridge(const TrainerBridge&) = delete;
  TrainerBridge& operator=(const TrainerBridge&) = delete;

  const std::string& endpoint() const;

  // Answers every waiting message. `model` is the daemon's current model, or null while it has none
  // (first start: an attach is then asked for the trainer's parameters, see takeInitial). `next` is the
  // round the node begins next.
  void poll(std::uint64_t nowMs, const training::Vec* model, Round next);
  // Blocks up to timeoutMs for a message on the bridge socket.
  void waitReadable(int timeoutMs);

  // First start: the parameters of the first trainer that attached and sent init (once). The trainer's
  // init is answered with `ready` when the runtime calls ready(model) after building its node.
  std::optional<training::Vec> takeInitial();
  void ready(const training::Vec& model, Round next);
  // The model's layout (daemon/bridge/model_layout.h): set from the data directory on a restart, or taken
  // from the trainer whose init became the initial model. Once known, an attach with another is refused.
  void setLayout(ModelLayout layout);
  const std::optional<ModelLayout>& layout() const;

  // A trainer is attached and has spoken within idle_timeout_ms.
  bool attached(std::uint64_t nowMs) const;
  bool hasRequest() const;
  // Gradient mode with a float32 trainer and float32 state: where the pending request's gradient lies in the
  // shared memory, for the node to read it there instead of a copy (one pass and 4 bytes per parameter fewer;
  // training::ExternalGradient::supplyShared). `keep` holds the mapping until dropped, so a trainer that
  // detaches or is replaced during the round unmaps nothing under the reader. The trainer waits for the
  // reply (finishRound, askGradientAt) before it writes the region again. nullopt: no such request, or the
  // types differ and readRequest converts the gradient into g.
  struct SharedGradient {
    const Real* data;
    std::shared_ptr<const void> keep;
  };
  std::optional<SharedGradient> sharedGradient() const;
  // Moves the pending request's input into the node: model mode x <- parameters, gradient mode
  // g <- gradient (left alone when sharedGradient() has it). Returns the loss the trainer reported (NaN
  // when it sent none).
  double readRequest(training::Vec& x, training::Vec& g);
  // The round the request began is over: parameters <- x, reply {"op":"mixed","round":next,"done":done}.
  // False when the round served no request (the trainer was away, or left during the round).
  bool finishRound(const training::Vec& x, Round next, bool done);
  // Gradient mode, LEAD's start step: parameters <- x, reply {"op":"grad_at"}; the trainer answers with a
  // new grad request.
  void askGradientAt(const training::Vec& x, Round t);
  // The node's model changed without the trainer seeing it (a round run without it, a state transfer):
  // its next request was computed from an old model, so the runtime answers it with resync instead of
  // running a round.
  void modelChanged();
  bool trainerCurrent() const;
  // Discards the pending request and hands the trainer the current model: model mode replies
  // {"op":"mixed","round":next,"done":false,"resync":true}, gradient mode {"op":"grad_at"}.
  void resync(const training::Vec& x, Round next);
  // The node ran its last round: requests from now on are answered with done at once.
  void setDone(Round next);

  // "attached", "waiting" (attached, no request), "detached" or "none" (never attached): status files.
  std::string stateName(std::uint64_t nowMs) const;
  // The last accuracy / loss the trainer reported with {"op":"report"} (NaN: none).
  double reportedAccuracy() const;
  double reportedLoss() const;
  const TrainerStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gossip::daemon
