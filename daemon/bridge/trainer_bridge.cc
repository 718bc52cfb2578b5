#include "daemon/bridge/trainer_bridge.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "daemon/bridge/bridge_errors.h"
#include "daemon/bridge/param_copy.h"
#include "daemon/bridge/shared_memory.h"
#include "transport/zmq/request_server.h"

namespace gossip::daemon {
namespace {

using json = nlohmann::json;
using training::Vec;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::uint64_t kKeepaliveMs = 1000;

std::uint64_t nowNs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

struct TrainerBridge::Impl {
  TrainerBridgeOptions o;
  unsigned threads = copyThreads(o.copy_threads);  // for the parameter copies (daemon/bridge/param_copy.h)
  std::string endpoint;
  std::unique_ptr<peer::RequestServer> server;  // the ROUTER trainers talk to, and its connection monitor
  int connections = 0;
  TrainerStats stats;
  std::uint64_t shmSerial = 0;

  // The attached trainer.
  struct Trainer {
    std::string identity;  // ROUTER routing id of its DEALER
    std::size_t dim = 0;
    ModelLayout layout;  // what its attach named
    // The shared memory's element type, the attach's dtype. bfloat16 is held as its 16 bits and converted
    // to and from the float32 state here; the wire carries the state (float32), not bfloat16.
    enum class Elem { F32, F64, BF16 } elem = Elem::F32;
    std::size_t itemSize() const { return elem == Elem::F64 ? 8 : elem == Elem::BF16 ? 2 : 4; }
    long long pid = 0;
    // Shared: a gradient read in place (sharedGradient) holds the mapping until the node has used it, past a
    // detach or a new attach in the middle of the round. Null once training ended (finishRound(done), setDone).
    std::shared_ptr<SharedMemory> shm;
    bool awaitingInit = false;  // attached with init:true, init not received yet
  };
  std::optional<Trainer> trainer;
  // The model's layout: the first trainer's (init), or the one the runtime read from the data directory.
  // Unknown (a data directory from before layouts): any attach of the right dim is taken.
  std::optional<ModelLayout> layout;
  bool everAttached = false;
  std::uint64_t lastHeard = 0;
  enum class Op { None, Mix, Grad };
  Op pending = Op::None;
  double pendingLoss = kNaN;
  std::string serving;  // identity whose request the current round serves ("" : none)
  std::uint64_t nextKeepalive = 0;
  std::optional<Vec> initial;
  std::string initFrom;  // identity to answer `ready`
  bool done = false;
  Round doneRound = 0;
  double accuracy = kNaN, loss = kNaN;
  bool current = false;  // the trainer holds the node's model as it is now
  std::uint64_t lastPoll = 0;  // ms of the last poll()

  explicit Impl(TrainerBridgeOptions opts) : o(std::move(opts)) {
    if (!o.log) o.log = logging::nullLogger("bridge");
    const std::string path = (o.data_dir / "trainer.sock").string();
    if (path.size() >= sizeof(sockaddr_un{}.sun_path))
      throw ConfigError("node.data_dir: '" + o.data_dir.string() + "' is too long for the trainer socket (" +
                        std::to_string(path.size()) + " characters; unix sockets allow " +
                        std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + ")");
    endpoint = "ipc://" + path;
    removeStaleSharedMemory(o.node);
    server = std::make_unique<peer::RequestServer>("trainer bridge", endpoint);  // IoError if it cannot bind
    // Only this user may attach: a trainer can replace the model and read it (the shared memory is 0600 too).
    if (::chmod(path.c_str(), 0600) != 0)
      throw IoError("trainer bridge: cannot restrict '" + path + "' to its owner: " + std::strerror(errno));
  }

  void send(const std::string& identity, const json& body) {
    // A reply fails when the trainer's connection is gone (the monitor reports that and readMonitor()
    // detaches it) or when the trainer stopped reading and its queue is full (the reply is dropped rather
    // than hold the node thread; request_server.h). Neither needs handling here.
    (void)server->reply(identity, body.dump());
  }
  // {"op":"error","code":...,"error":why}: the code for programs (daemon/bridge/bridge_errors.h), the text for people.
  void error(const std::string& identity, BridgeError code, const std::string& why) {
    ++stats.protocol_errors;
    send(identity, {{"op", "error"}, {"code", bridgeErrorCode(code)}, {"error", why}});
  }
  bool isTrainer(const std::string& identity) const { return trainer && trainer->identity == identity; }

  void detach(const char* why) {
    if (!trainer) return;
    o.log->warn("trainer detached ({}); following the neighbours with the last model", why);
    trainer.reset();
    pending = Op::None;
    serving.clear();
  }

  void readMonitor() {
    using Event = peer::RequestServer::ConnectionEvent;
    while (const auto event = server->takeConnectionEvent()) {
      if (*event == Event::Accepted) ++connections;
      if (*event == Event::Disconnected && connections > 0 && --connections == 0) detach("its connection closed");
    }
  }

  // The node's model into the parameters region: the trainer then holds the model as it is now.
  void writeModel(const Vec& x) {
    // Released after the last round: the trainer has been told done and holds the final model already.
    if (!trainer->shm) return;
    const auto t0 = nowNs();
    const std::span<const Real> src(x.data(), static_cast<std::size_t>(x.size()));
    std::byte* dst = trainer->shm->data();
    switch (trainer->elem) {
      case Trainer::Elem::F64: convertInto(src, std::span<double>{reinterpret_cast<double*>(dst), src.size()}, threads); break;
      case Trainer::Elem::F32: convertInto(src, std::span<float>{reinterpret_cast<float*>(dst), src.size()}, threads); break;
      case Trainer::Elem::BF16:
        convertInto(src, std::span<std::uint16_t>{reinterpret_cast<std::uint16_t*>(dst), src.size()}, threads);
        break;
    }
    stats.copy_ns += nowNs() - t0;
    current = true;
  }
  // The parameters (region 0) or the gradient (region 1) into dst, as Real.
  void readRegion(int region, Vec& dst) {
    GOSSIP_CHECK(trainer->shm, "the trainer's shared memory was released after the last round");
    const auto t0 = nowNs();
    const std::byte* src = trainer->shm->data() + region * trainer->dim * trainer->itemSize();
    dst.resize(static_cast<Eigen::Index>(trainer->dim));
    const std::span<Real> out(dst.data(), trainer->dim);
    switch (trainer->elem) {
      case Trainer::Elem::F64:
        convertInto(std::span<const double>{reinterpret_cast<const double*>(src), out.size()}, out, threads);
        break;
      case Trainer::Elem::F32:
        convertInto(std::span<const float>{reinterpret_cast<const float*>(src), out.size()}, out, threads);
        break;
      case Trainer::Elem::BF16:
        convertInto(std::span<const std::uint16_t>{reinterpret_cast<const std::uint16_t*>(src), out.size()}, out, threads);
        break;
    }
    stats.copy_ns += nowNs() - t0;
  }

  void onAttach(const std::string& id, const json& m, std::uint64_t now, const Vec* model, Round next) {
    // The fields are read as json and their types checked: value<T>() throws on a field of another type, which
    // would leave poll() and end the daemon.
    const json version = m.value("version", json(0));
    if (version != 1)
      return error(id, BridgeError::VersionUnsupported,
                   "protocol version " + version.dump() + " is not supported (this daemon speaks version 1)");
    if (!m.contains("dim") || !m["dim"].is_number_unsigned() || m["dim"].get<std::uint64_t>() == 0)
      return error(id, BridgeError::BadDim, "attach needs dim, the number of parameters (a positive integer)");
    const auto dim = m["dim"].get<std::uint64_t>();
    const json dtypeField = m.value("dtype", json("float32"));
    const std::string dtype = dtypeField.is_string() ? dtypeField.get<std::string>() : dtypeField.dump();
    if (dtype != "float32" && dtype != "float64" && dtype != "bfloat16")
      return error(id, BridgeError::BadDtype, "dtype '" + dtype + "' is not supported (float32, float64 or bfloat16)");
    if (model && static_cast<std::uint64_t>(model->size()) != dim)
      return error(id, BridgeError::DimMismatch,
                   "trainer has " + std::to_string(dim) + " parameters, the daemon's model has " + std::to_string(model->size()));
    ModelLayout attachLayout;
    if (const auto bad = ModelLayout::parse(m.contains("layout") ? &m["layout"] : nullptr, dim, attachLayout))
      return error(id, BridgeError::BadLayout, *bad);
    if (layout && layout->dim == dim) {
      if (const auto diff = describeLayoutDifference(*layout, attachLayout, "in the daemon's model", "in the trainer's");
          !diff.empty())
        return error(id, BridgeError::LayoutMismatch,
                     diff + " (a node trains one module: attach that module, or give this node a new node.data_dir)");
    }
    if (trainer && trainer->identity != id) {
      if (pending != Op::None || !serving.empty()) error(trainer->identity, BridgeError::Replaced, "replaced by another trainer");
      o.log->info("trainer replaced by a new attach");
    }
    pending = Op::None;
    serving.clear();
    Trainer t;
    t.identity = id;
    t.dim = dim;
    t.layout = std::move(attachLayout);
    t.elem = dtype == "float64" ? Trainer::Elem::F64 : dtype == "bfloat16" ? Trainer::Elem::BF16 : Trainer::Elem::F32;
    const std::size_t item = t.itemSize();
    t.pid = m.contains("pid") && m["pid"].is_number_integer() ? m["pid"].get<long long>() : 0;
    // The old mapping goes first: one model's worth of /dev/shm, not two (unless the node still reads a
    // gradient in it, until the end of its round: TrainerBridge::sharedGradient).
    trainer.reset();
    t.shm = std::make_shared<SharedMemory>(
        "/gossipd-" + std::to_string(getuid()) + "-" + std::to_string(o.node) + "-" + std::to_string(getpid()) + "-" +
            std::to_string(++shmSerial),
        2 * dim * item);
    t.awaitingInit = model == nullptr;
    trainer = std::move(t);
    everAttached = true;
    lastHeard = now;
    ++stats.attaches;
    current = false;
    if (model) writeModel(*model);
    o.log->info("trainer attached (pid {}, {} parameters, {}){}", trainer->pid, dim, dtype,
                model ? ", given the current model" : ", asked for the initial model");
    send(id, {{"op", "attached"},
              {"node", o.node},
              {"nodes", o.nodes},
              // The trainer's part of the data: a node that joined beyond cluster.nodes (node.id >= nodes)
              // shares node.id mod nodes's shard instead of indexing past the end (issue 29: node=2,
              // nodes=2 crashed the sharding idiom and DistributedSampler).
              {"shard", o.node % std::max<std::uint32_t>(o.nodes, 1)},
              {"shards", std::max<std::uint32_t>(o.nodes, 1)},
              {"mode", o.gradient_mode ? "gradient" : "model"},
              {"algorithm", o.algorithm},
              {"dim", dim},
              {"dtype", dtype},
              {"shm", trainer->shm->path()},
              {"round", next},
              {"rounds", o.rounds},
              {"checkpoint_every", o.checkpoint_every},
              {"init", model == nullptr}});
  }

  void onInit(const std::string& id) {
    if (!isTrainer(id)) return error(id, BridgeError::NotAttached, "init before attach");
    if (!trainer->awaitingInit)
      return error(id, BridgeError::InitUnexpected, "init was not asked for (the daemon already has a model)");
    Vec x;
    readRegion(0, x);
    if (!std::isfinite(x.squaredNorm()))  // still awaiting: the trainer may send init again
      return error(id, BridgeError::NonfiniteInit, "the initial parameters hold a non-finite value");
    trainer->awaitingInit = false;
    initial = std::move(x);
    layout = trainer->layout;
    initFrom = id;
  }

  void onRoundRequest(const std::string& id, const json& m, Op op, std::uint64_t now) {
    if (!isTrainer(id)) return error(id, BridgeError::NotAttached, "not attached: send attach first");
    if (trainer->awaitingInit) return error(id, BridgeError::InitFirst, "send init first: the daemon has no model yet");
    if (op == Op::Mix && o.gradient_mode)
      return error(id, BridgeError::WrongMode, "this daemon runs trainer.mode = 'gradient': send grad (client: step), not mix");
    if (op == Op::Grad && !o.gradient_mode)
      return error(id, BridgeError::WrongMode, "this daemon runs trainer.mode = 'model': send mix (client: mix), not grad");
    if (pending != Op::None || !serving.empty())
      return error(id, BridgeError::RequestPending, "a request is already waiting for its round");
    if (done) return send(id, {{"op", "mixed"}, {"round", doneRound}, {"done", true}});
    pending = op;
    pendingLoss = m.contains("loss") && m["loss"].is_number() ? m["loss"].get<double>() : kNaN;
    nextKeepalive = now + kKeepaliveMs;
  }

  void handle(const std::string& id, const std::string& text, std::uint64_t now, const Vec* model, Round next) {
    json m;
    try {
      m = json::parse(text);
    } catch (const json::exception&) {
      return error(id, BridgeError::NotJson, "a message that is not JSON");
    }
    if (!m.is_object() || !m.contains("op") || !m["op"].is_string())
      return error(id, BridgeError::NoOp, "a message without \"op\"");
    if (isTrainer(id)) lastHeard = now;
    const std::string op = m["op"].get<std::string>();
    if (op == "hello") {
      // Before an attach: what the client must know to choose what it binds. Floating-point buffers
      // (BatchNorm's running statistics) are mixed only in model mode, where the trainer's values come in
      // every round; in gradient mode the daemon writes its model over the region each round and would
      // erase the trainer's updates to them (docs/trainer.md, "Buffers").
      return send(id, {{"op", "hello"},
                       {"version", 1},
                       {"mode", o.gradient_mode ? "gradient" : "model"},
                       {"algorithm", o.algorithm},
                       {"dim", model ? json(model->size()) : json(nullptr)}});
    }
    if (op == "attach") return onAttach(id, m, now, model, next);
    if (op == "init") return onInit(id);
    if (op == "mix") return onRoundRequest(id, m, Op::Mix, now);
    if (op == "grad") return onRoundRequest(id, m, Op::Grad, now);
    if (op == "report") {
      if (m.contains("accuracy") && m["accuracy"].is_number()) accuracy = m["accuracy"].get<double>();
      if (m.contains("loss") && m["loss"].is_number()) loss = m["loss"].get<double>();
      return send(id, {{"op", "ok"}});
    }
    if (op == "detach") {
      if (isTrainer(id)) detach("it said so");
      return send(id, {{"op", "ok"}});
    }
    error(id, BridgeError::UnknownOp, "unknown op '" + op + "'");
  }
};

TrainerBridge::TrainerBridge(TrainerBridgeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
TrainerBridge::~TrainerBridge() = default;

const std::string& TrainerBridge::endpoint() const { return impl_->endpoint; }

void TrainerBridge::poll(std::uint64_t nowMs, const Vec* model, Round next) {
  Impl& i = *impl_;
  i.lastPoll = nowMs;
  i.readMonitor();
  // Extra frames after the body are dropped by the server: they are not part of the protocol.
  while (auto request = i.server->receive()) i.handle(request->identity, request->body, nowMs, model, next);
  // Keepalives while the request waits to begin its round and while the round waits for the neighbours.
  if (i.trainer && (i.pending != Impl::Op::None || !i.serving.empty()) && nowMs >= i.nextKeepalive) {
    i.send(i.trainer->identity, {{"op", "wait"}, {"round", next}});
    i.nextKeepalive = nowMs + kKeepaliveMs;
  }
}

void TrainerBridge::waitReadable(int timeoutMs) { (void)impl_->server->wait(timeoutMs); }

std::optional<Vec> TrainerBridge::takeInitial() { return std::exchange(impl_->initial, std::nullopt); }

void TrainerBridge::setLayout(ModelLayout layout) { impl_->layout = std::move(layout); }

const std::optional<ModelLayout>& TrainerBridge::layout() const { return impl_->layout; }

void TrainerBridge::ready(const Vec& model, Round next) {
  Impl& i = *impl_;
  if (i.isTrainer(i.initFrom) && !i.trainer->awaitingInit && static_cast<std::size_t>(model.size()) == i.trainer->dim) {
    i.writeModel(model);
    i.send(i.initFrom, {{"op", "ready"}, {"round", next}});
  }
  i.initFrom.clear();
}

bool TrainerBridge::attached(std::uint64_t nowMs) const {
  const Impl& i = *impl_;
  if (!i.trainer || i.trainer->awaitingInit) return false;
  return i.pending != Impl::Op::None || !i.serving.empty() || nowMs < i.lastHeard + i.o.idle_timeout_ms;
}

bool TrainerBridge::hasRequest() const { return impl_->pending != Impl::Op::None; }

std::optional<TrainerBridge::SharedGradient> TrainerBridge::sharedGradient() const {
  const Impl& i = *impl_;
  if (!i.trainer || i.pending != Impl::Op::Grad || !i.trainer->shm) return std::nullopt;
  // The region holds the state's own type only for a float32 trainer with float32 state; any other pair
  // is converted (readRegion).
  if (kRealIsDouble || i.trainer->elem != Impl::Trainer::Elem::F32) return std::nullopt;
  const std::byte* region = i.trainer->shm->data() + i.trainer->dim * i.trainer->itemSize();
  return SharedGradient{reinterpret_cast<const Real*>(region), i.trainer->shm};
}

double TrainerBridge::readRequest(Vec& x, Vec& g) {
  Impl& i = *impl_;
  GOSSIP_CHECK(i.trainer && i.pending != Impl::Op::None, "no trainer request is waiting");
  if (i.pending == Impl::Op::Mix)
    i.readRegion(0, x);
  else if (!sharedGradient())
    i.readRegion(1, g);
  i.pending = Impl::Op::None;
  i.serving = i.trainer->identity;
  return i.pendingLoss;
}

bool TrainerBridge::finishRound(const Vec& x, Round next, bool done) {
  Impl& i = *impl_;
  const std::string who = std::exchange(i.serving, std::string());
  if (who.empty() || !i.isTrainer(who)) return false;  // the trainer left or was replaced during the round
  i.writeModel(x);
  ++i.stats.rounds_served;
  i.lastHeard = i.lastPoll;  // the trainer's idle clock starts at our reply
  i.send(who, {{"op", "mixed"}, {"round", next}, {"done", done}});
  // The last round: the trainer holds the final model in its own mapping and the daemon writes the region no
  // more (later requests are answered with done at once), so it lets go of its mapping now instead of when
  // the trainer detaches. A trainer that exits first would otherwise leave the whole region charged to the
  // daemon until it noticed (PSS: 2 bytes per parameter more at the end of a run, docs/results.md §25).
  // The file is unlinked too; the trainer's mapping keeps its pages until it unmaps.
  if (done) {
    i.trainer->shm.reset();
    // From now on requests are answered with done at once (setDone does so again when the node finishes),
    // also if the node re-runs a round after a rejoin: nothing would find the region to write.
    i.done = true;
    i.doneRound = next;
  }
  return true;
}

void TrainerBridge::modelChanged() { impl_->current = false; }
bool TrainerBridge::trainerCurrent() const { return impl_->current; }

void TrainerBridge::resync(const Vec& x, Round next) {
  Impl& i = *impl_;
  GOSSIP_CHECK(i.trainer && i.pending != Impl::Op::None, "no trainer request to answer");
  i.pending = Impl::Op::None;
  i.writeModel(x);
  if (i.o.gradient_mode)
    i.send(i.trainer->identity, {{"op", "grad_at"}, {"round", next}});
  else
    i.send(i.trainer->identity, {{"op", "mixed"}, {"round", next}, {"done", false}, {"resync", true}});
}

void TrainerBridge::askGradientAt(const Vec& x, Round t) {
  Impl& i = *impl_;
  const std::string who = std::exchange(i.serving, std::string());
  if (who.empty() || !i.isTrainer(who)) return;
  i.writeModel(x);
  i.send(who, {{"op", "grad_at"}, {"round", t}});
}

void TrainerBridge::setDone(Round next) {
  Impl& i = *impl_;
  i.done = true;
  i.doneRound = next;
  if (i.trainer && i.pending != Impl::Op::None) {
    i.pending = Impl::Op::None;
    i.send(i.trainer->identity, {{"op", "mixed"}, {"round", next}, {"done", true}});
  }
  // As in finishRound(done), also when the last round served no request (the trainer was away): the region
  // is the trainer's alone from now on.
  if (i.trainer) i.trainer->shm.reset();
}

std::string TrainerBridge::stateName(std::uint64_t nowMs) const {
  if (!impl_->everAttached) return "none";
  return attached(nowMs) ? "attached" : "detached";
}

double TrainerBridge::reportedAccuracy() const { return impl_->accuracy; }
double TrainerBridge::reportedLoss() const { return impl_->loss; }
const TrainerStats& TrainerBridge::stats() const { return impl_->stats; }

}  // namespace gossip::daemon
