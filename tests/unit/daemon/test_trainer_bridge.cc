// The daemon's end of the trainer protocol (docs/trainer.md) against a raw DEALER socket: every message of
// the protocol, its errors, and how the bridge notices a trainer that is gone.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/error.h"
#include "daemon/bridge/bridge_errors.h"
#include "daemon/bridge/trainer_bridge.h"

using namespace gossip;
using daemon::TrainerBridge;
using json = nlohmann::json;
using training::Vec;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gossip-bridge-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

daemon::TrainerBridgeOptions options(const fs::path& dir, bool gradient = false) {
  daemon::TrainerBridgeOptions o;
  o.data_dir = dir;
  o.gradient_mode = gradient;
  o.node = 3;
  o.nodes = 8;
  o.algorithm = gradient ? "lead" : "dpsgd";
  o.rounds = 100;
  o.idle_timeout_ms = 5000;
  return o;
}

// A trainer's socket plus its view of the shared memory.
struct Client {
  zmq::context_t ctx{1};
  zmq::socket_t s{ctx, zmq::socket_type::dealer};
  void* map = nullptr;
  std::size_t bytes = 0;
  explicit Client(const std::string& endpoint) {
    s.set(zmq::sockopt::linger, 0);
    s.connect(endpoint);
  }
  ~Client() {
    if (map) munmap(map, bytes);
  }
  void send(const json& m) {
    const std::string t = m.dump();
    s.send(zmq::buffer(t), zmq::send_flags::none);
  }
  // Polls the bridge (the daemon's loop) until a reply other than a keepalive arrives, at most 5 s.
  json reply(TrainerBridge& b, const Vec* model, Round next, std::uint64_t nowMs = 0, bool skipWait = true) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      b.poll(nowMs, model, next);
      zmq::message_t m;
      if (s.recv(m, zmq::recv_flags::dontwait)) {
        auto j = json::parse(m.to_string());
        if (skipWait && j["op"] == "wait") continue;
        return j;
      }
      b.waitReadable(5);
    }
    FAIL("no reply from the bridge within 5 s");
    return {};
  }
  void mapShm(const json& attached) {
    const std::string path = attached["shm"];
    const int fd = open(path.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    bytes = 2 * attached["dim"].get<std::size_t>() *
            (attached["dtype"] == "float64" ? 8 : attached["dtype"] == "bfloat16" ? 2 : 4);
    map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    REQUIRE(map != MAP_FAILED);
  }
  float* params() { return static_cast<float*>(map); }
  float* grad(std::size_t dim) { return static_cast<float*>(map) + dim; }
};

// Polls the bridge (the daemon's loop) until the trainer's mix or grad request is waiting, at most 1 s.
void waitForRequest(TrainerBridge& b, const Vec& model, Round next, std::uint64_t nowMs) {
  for (int i = 0; i < 200 && !b.hasRequest(); ++i) {
    b.poll(nowMs, &model, next);
    b.waitReadable(5);
  }
  REQUIRE_MESSAGE(b.hasRequest(), "the trainer's request did not reach the bridge");
}

json attachMsg(std::size_t dim, const char* dtype = "float32") {
  return {{"op", "attach"}, {"version", 1}, {"dim", dim}, {"dtype", dtype}, {"pid", 42}};
}

// An error reply as "<code>: <text>"; it must be {"op":"error"} and have both.
std::string errorOf(const json& r) {
  REQUIRE(r["op"] == "error");
  REQUIRE(r.contains("code"));
  REQUIRE(r.contains("error"));
  return r["code"].get<std::string>() + ": " + r["error"].get<std::string>();
}

// Attaches c as a float32 trainer of the model's size and maps its shared memory; returns the memory's path.
std::string attachMapped(TrainerBridge& b, Client& c, const Vec& model, Round next) {
  c.send(attachMsg(static_cast<std::size_t>(model.size())));
  const auto r = c.reply(b, &model, next);
  REQUIRE(r["op"] == "attached");
  c.mapShm(r);
  return r["shm"];
}

}  // namespace

TEST_CASE("a bfloat16 trainer: its 16-bit values in the shared memory - rounded to nearest even - float32 state") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 1.0 + 0x1p-8, -3.0}};  // 1 + 2^-8 lies halfway between two bfloat16s: to the even one, 1.0
  Client c(b.endpoint());
  c.send(attachMsg(3, "bfloat16"));
  auto r = c.reply(b, &model, 0);
  REQUIRE(r["op"] == "attached");
  CHECK(r["dtype"] == "bfloat16");
  c.mapShm(r);
  CHECK(c.bytes == 2 * 3 * 2);
  auto* bits = static_cast<std::uint16_t*>(c.map);
  CHECK(bits[0] == 0x3f80);  // 1.0
  CHECK(bits[1] == 0x3f80);  // rounded to 1.0
  CHECK(bits[2] == 0xc040);  // -3.0
  bits[0] = 0x4120;          // the trainer's step: 10.0
  c.send({{"op", "mix"}});
  waitForRequest(b, model, 0, 0);
  Vec g;
  b.readRequest(model, g);
  CHECK(model == Vec{{10.0, 1.0, -3.0}});  // widened exactly
  model = Vec{{-1.5, 0.0, 65536.0}};
  b.finishRound(model, 1, false);
  CHECK(c.reply(b, &model, 1)["op"] == "mixed");
  CHECK(bits[0] == 0xbfc0);
  CHECK(bits[1] == 0x0000);
  CHECK(bits[2] == 0x4780);
}

TEST_CASE("first start: the trainer's parameters become the initial model") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Client c(b.endpoint());
  c.send(attachMsg(4));
  auto r = c.reply(b, nullptr, 0);
  REQUIRE(r["op"] == "attached");
  CHECK(r["init"] == true);
  CHECK(r["node"] == 3);
  CHECK(r["nodes"] == 8);
  CHECK(r["shard"] == 3);
  CHECK(r["shards"] == 8);
  CHECK(r["mode"] == "model");
  CHECK(r["algorithm"] == "dpsgd");
  CHECK(r["rounds"] == 100);
  CHECK(!b.attached(0));  // not before it has given the model
  c.mapShm(r);
  const float init[] = {1.5f, -2.0f, 0.25f, 8.0f};
  std::memcpy(c.params(), init, sizeof init);
  c.send({{"op", "init"}});
  std::optional<Vec> x0;
  for (int i = 0; i < 200 && !x0; ++i) {
    b.poll(0, nullptr, 0);
    x0 = b.takeInitial();
    b.waitReadable(5);
  }
  REQUIRE(x0);
  CHECK(*x0 == Vec{{1.5, -2.0, 0.25, 8.0}});
  CHECK(!b.takeInitial());  // once
  b.ready(*x0, 0);
  CHECK(c.reply(b, &*x0, 0)["op"] == "ready");
  CHECK(b.attached(0));
  CHECK(b.stateName(0) == "attached");
}

TEST_CASE("the first trainer's layout is the node's - a later attach with another is refused - naming the tensor") {
  TempDir d;
  TrainerBridge b(options(d.path));
  const json layout = json::parse(R"([["fc.weight",[2,2],"float32"],["fc.bias",[2],"float32"]])");
  std::optional<Vec> x0;
  {
    Client c(b.endpoint());
    json m = attachMsg(6);
    m["layout"] = layout;
    c.send(m);
    auto r = c.reply(b, nullptr, 0);
    REQUIRE(r["op"] == "attached");
    CHECK(!b.layout());  // not the node's until its init is the initial model
    c.send({{"op", "init"}});
    for (int i = 0; i < 200 && !x0; ++i) {
      b.poll(0, nullptr, 0);
      x0 = b.takeInitial();
      b.waitReadable(5);
    }
    REQUIRE(x0);
  }
  REQUIRE(b.layout());
  CHECK(b.layout()->toJson() == layout);
  Client c(b.endpoint());
  json swapped = attachMsg(6);
  swapped["layout"] = json::parse(R"([["fc.bias",[2],"float32"],["fc.weight",[2,2],"float32"]])");
  c.send(swapped);
  CHECK(errorOf(c.reply(b, &*x0, 0)) ==
        "layout_mismatch: tensor 0 is \"fc.weight\" [2, 2] float32 in the daemon's model, \"fc.bias\" [2] float32 in the "
        "trainer's (a node trains one module: attach that module, or give this node a new node.data_dir)");
  c.send(attachMsg(6));  // no layout (bind_array): an unnamed vector, not the node's model either
  CHECK(errorOf(c.reply(b, &*x0, 0)).rfind("layout_mismatch: the model is 2 named tensors in the daemon's model, "
                                           "an unnamed vector of 6 values", 0) == 0);
  json bad = attachMsg(6);
  bad["layout"] = json::parse(R"([["fc.weight",[2,2],"float32"]])");
  c.send(bad);
  CHECK(errorOf(c.reply(b, &*x0, 0)) == "bad_layout: the layout's tensors hold 4 values, not dim = 6");
  json same = attachMsg(6);
  same["layout"] = layout;
  c.send(same);
  CHECK(c.reply(b, &*x0, 0)["op"] == "attached");
}

TEST_CASE("hello: the mode and the model's size before any attach - attaching nothing") {
  TempDir d;
  TrainerBridge model(options(d.path));
  Client c(model.endpoint());
  c.send({{"op", "hello"}});
  auto r = c.reply(model, nullptr, 0);
  CHECK(r["op"] == "hello");
  CHECK(r["version"] == 1);
  CHECK(r["mode"] == "model");
  CHECK(r["dim"].is_null());  // no model yet: the first trainer's will be the initial one
  CHECK(model.stateName(0) == "none");
  const Vec x = Vec::Constant(5, 1.0f);
  c.send({{"op", "hello"}});
  r = c.reply(model, &x, 0);
  CHECK(r["dim"] == 5);

  TempDir d2;
  TrainerBridge grad(options(d2.path, true));
  Client g(grad.endpoint());
  g.send({{"op", "hello"}});
  CHECK(g.reply(grad, nullptr, 0)["mode"] == "gradient");
}

TEST_CASE("a node that joined beyond cluster.nodes is given a shard within range") {
  TempDir d;
  auto o = options(d.path);
  o.node = 11;  // cluster.nodes = 8
  TrainerBridge b(o);
  Client c(b.endpoint());
  c.send(attachMsg(2));
  const auto r = c.reply(b, nullptr, 0);
  CHECK(r["node"] == 11);
  CHECK(r["shard"] == 3);
  CHECK(r["shards"] == 8);
}

TEST_CASE("a model round: parameters in - mixed model out - one reply") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0, 3.0}};
  Client c(b.endpoint());
  c.send(attachMsg(3));
  auto r = c.reply(b, &model, 7);
  REQUIRE(r["op"] == "attached");
  CHECK(r["init"] == false);
  CHECK(r["round"] == 7);
  c.mapShm(r);
  CHECK(c.params()[0] == 1.0f);  // the daemon's model is in the mapping at attach
  CHECK(c.params()[2] == 3.0f);

  c.params()[0] = 10.0f;  // the trainer's optimizer step
  c.send({{"op", "mix"}, {"loss", 0.5}});
  waitForRequest(b, model, 7, 0);
  Vec g;
  CHECK(b.readRequest(model, g) == doctest::Approx(0.5));
  CHECK(model == Vec{{10.0, 2.0, 3.0}});
  CHECK(g.size() == 0);  // model mode: no gradient travels
  CHECK(!b.hasRequest());
  model = Vec{{-1.0, -2.0, -3.0}};  // the mixed model
  b.finishRound(model, 8, false);
  r = c.reply(b, &model, 8);
  CHECK(r == json{{"op", "mixed"}, {"round", 8}, {"done", false}});
  CHECK(c.params()[1] == -2.0f);
  CHECK(b.stats().rounds_served == 1);
}

TEST_CASE("a trainer whose model is out of date is resynced instead of mixed") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0}};
  Client c(b.endpoint());
  c.send(attachMsg(2));
  auto r = c.reply(b, &model, 0);
  REQUIRE(r["op"] == "attached");
  c.mapShm(r);
  CHECK(b.trainerCurrent());  // the attach handed it the model
  b.modelChanged();           // e.g. a state transfer
  model = Vec{{5.0, 6.0}};
  CHECK(!b.trainerCurrent());
  c.params()[0] = 99.0f;  // its step from the old model
  c.send({{"op", "mix"}});
  waitForRequest(b, model, 3, 0);
  b.resync(model, 3);
  r = c.reply(b, &model, 3);
  CHECK(r == json{{"op", "mixed"}, {"round", 3}, {"done", false}, {"resync", true}});
  CHECK(c.params()[0] == 5.0f);
  CHECK(c.params()[1] == 6.0f);
  CHECK(b.trainerCurrent());
  CHECK(!b.hasRequest());
  CHECK(b.stats().rounds_served == 0);
}

TEST_CASE("gradient mode: the gradient region is read - and a start step asks for a gradient at the moved point") {
  TempDir d;
  TrainerBridge b(options(d.path, /*gradient=*/true));
  Vec model{{1.0, 1.0}};
  Client c(b.endpoint());
  c.send(attachMsg(2, "float64"));
  auto r = c.reply(b, &model, 0);
  REQUIRE(r["op"] == "attached");
  CHECK(r["mode"] == "gradient");
  c.mapShm(r);
  double* p = static_cast<double*>(c.map);
  p[2] = 0.125;  // gradient region follows dim parameters
  p[3] = -4.0;
  c.send({{"op", "mix"}});
  CHECK(errorOf(c.reply(b, &model, 0)) ==
        "wrong_mode: this daemon runs trainer.mode = 'gradient': send grad (client: step), not mix");
  c.send({{"op", "grad"}, {"loss", 2.0}});
  waitForRequest(b, model, 0, 0);
  CHECK(!b.sharedGradient());  // only a float32 trainer with float32 state is read in place: this one is copied into g
  Vec g;
  b.readRequest(model, g);
  CHECK(g == Vec{{0.125, -4.0}});
  CHECK(model == Vec{{1.0, 1.0}});  // x is the daemon's in gradient mode
  b.askGradientAt(Vec{{0.5, 0.25}}, 0);
  r = c.reply(b, &model, 0);
  CHECK(r["op"] == "grad_at");
  CHECK(p[0] == 0.5);
  CHECK(p[1] == 0.25);
}

TEST_CASE("protocol errors are one-line replies with a code - and change nothing") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0, 3.0}};
  Client c(b.endpoint());
  auto ask = [&](const json& m) {
    c.send(m);
    return errorOf(c.reply(b, &model, 0));
  };
  CHECK(ask({{"op", "mix"}}) == "not_attached: not attached: send attach first");
  CHECK(ask({{"op", "init"}}) == "not_attached: init before attach");
  CHECK(ask({{"op", "dance"}}) == "unknown_op: unknown op 'dance'");
  CHECK(ask({{"no", "op"}}) == "no_op: a message without \"op\"");
  CHECK(ask({{"op", 7}}) == "no_op: a message without \"op\"");
  CHECK(ask(attachMsg(5)) == "dim_mismatch: trainer has 5 parameters, the daemon's model has 3");
  CHECK(ask(attachMsg(3, "int8")) == "bad_dtype: dtype 'int8' is not supported (float32, float64 or bfloat16)");
  CHECK(ask({{"op", "attach"}, {"version", 2}, {"dim", 3}}) ==
        "version_unsupported: protocol version 2 is not supported (this daemon speaks version 1)");
  CHECK(ask({{"op", "attach"}, {"dim", 3}}).starts_with("version_unsupported: protocol version 0 "));
  CHECK(ask({{"op", "attach"}, {"version", 1}}) ==
        "bad_dim: attach needs dim, the number of parameters (a positive integer)");
  CHECK(ask({{"op", "attach"}, {"version", 1}, {"dim", 0}}).starts_with("bad_dim: "));
  CHECK(ask({{"op", "attach"}, {"version", 1}, {"dim", -3}}).starts_with("bad_dim: "));
  c.s.send(zmq::str_buffer("not json{"), zmq::send_flags::none);
  CHECK(errorOf(c.reply(b, &model, 0)) == "not_json: a message that is not JSON");
  CHECK(b.stateName(0) == "none");
  CHECK(b.stats().protocol_errors == 13);
  c.send(attachMsg(3));
  REQUIRE(c.reply(b, &model, 0)["op"] == "attached");
  CHECK(ask({{"op", "grad"}}) == "wrong_mode: this daemon runs trainer.mode = 'model': send mix (client: mix), not grad");
  CHECK(ask({{"op", "init"}}) == "init_unexpected: init was not asked for (the daemon already has a model)");
  c.send({{"op", "mix"}});
  c.send({{"op", "mix"}});
  CHECK(errorOf(c.reply(b, &model, 0)) == "request_pending: a request is already waiting for its round");
  CHECK(b.hasRequest());
}

TEST_CASE("an attach with a field of the wrong type gets an error reply - not an exception out of poll") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0, 3.0}};
  Client c(b.endpoint());
  auto ask = [&](const json& m) {
    c.send(m);
    return errorOf(c.reply(b, &model, 0));
  };
  CHECK(ask({{"op", "attach"}, {"version", "1"}, {"dim", 3}}) ==
        "version_unsupported: protocol version \"1\" is not supported (this daemon speaks version 1)");
  CHECK(ask({{"op", "attach"}, {"version", 1}, {"dim", 3}, {"dtype", 32}}) ==
        "bad_dtype: dtype '32' is not supported (float32, float64 or bfloat16)");
  c.send({{"op", "attach"}, {"version", 1}, {"dim", 3}, {"pid", "me"}});  // pid only names the trainer in the log
  CHECK(c.reply(b, &model, 0)["op"] == "attached");
}

TEST_CASE("first start: a request before init - and an initial model that is not finite - are errors the trainer can recover from") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Client c(b.endpoint());
  c.send(attachMsg(2));
  auto r = c.reply(b, nullptr, 0);
  REQUIRE(r["init"] == true);
  c.mapShm(r);
  c.send({{"op", "mix"}});
  CHECK(errorOf(c.reply(b, nullptr, 0)) == "init_first: send init first: the daemon has no model yet");
  c.params()[0] = 1.0f;
  c.params()[1] = std::numeric_limits<float>::quiet_NaN();
  c.send({{"op", "init"}});
  CHECK(errorOf(c.reply(b, nullptr, 0)) == "nonfinite_init: the initial parameters hold a non-finite value");
  CHECK(!b.takeInitial());
  // The refused init changed nothing: the daemon still waits for one, and a finite one is taken.
  c.send({{"op", "mix"}});
  CHECK(errorOf(c.reply(b, nullptr, 0)).starts_with("init_first: "));
  CHECK(b.stats().protocol_errors == 3);
  c.params()[1] = 2.0f;
  c.send({{"op", "init"}});
  std::optional<Vec> x0;
  for (int i = 0; i < 200 && !x0; ++i) {
    b.poll(0, nullptr, 0);
    x0 = b.takeInitial();
    b.waitReadable(5);
  }
  REQUIRE(x0);
  CHECK(*x0 == Vec{{1.0, 2.0}});
}

TEST_CASE("the error codes: distinct snake_case names - each in docs/trainer.md's table and no other") {
  std::set<std::string> names;
  for (const auto e : daemon::kBridgeErrors) {
    const std::string n(daemon::bridgeErrorCode(e));
    CAPTURE(n);
    CHECK(!n.empty());
    CHECK(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos);
    CHECK(names.insert(n).second);
  }
  CHECK(names.size() == static_cast<std::size_t>(daemon::BridgeError::Replaced) + 1);  // kBridgeErrors has them all
  // The table's rows: "| `code` | when |" after its "| code |" header, up to the first line that is not a row.
  std::ifstream doc(std::string(GOSSIP_SOURCE_DIR) + "/docs/trainer.md");
  REQUIRE(doc);
  std::set<std::string> documented;
  bool inTable = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.starts_with("| code |")) {
      inTable = true;
    } else if (inTable && line.starts_with("| `")) {
      const auto end = line.find('`', 3);
      REQUIRE(end != std::string::npos);
      documented.insert(line.substr(3, end - 3));
    } else if (inTable && !line.starts_with("|--") && !line.starts_with("|---")) {
      break;
    }
  }
  for (const auto& n : names) CHECK_MESSAGE(documented.count(n) == 1, n, " is not in docs/trainer.md's table");
  for (const auto& n : documented) CHECK_MESSAGE(names.count(n) == 1, n, " is in docs/trainer.md's table but sent by no one");
}

TEST_CASE("a waiting request gets keepalives - and the end of training answers it with done") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{0.0}};
  Client c(b.endpoint());
  c.send(attachMsg(1));
  REQUIRE(c.reply(b, &model, 0)["op"] == "attached");
  c.send({{"op", "mix"}});
  waitForRequest(b, model, 5, 1000);
  zmq::message_t early;
  CHECK(!c.s.recv(early, zmq::recv_flags::dontwait));  // the first keepalive comes a second later
  auto r = c.reply(b, &model, 5, 2000, /*skipWait=*/false);
  CHECK(r == json{{"op", "wait"}, {"round", 5}});
  Vec g;
  b.readRequest(model, g);  // the round begins and waits for the neighbours: keepalives go on
  r = c.reply(b, &model, 5, 3000, /*skipWait=*/false);
  CHECK(r == json{{"op", "wait"}, {"round", 5}});
  b.finishRound(model, 6, false);
  CHECK(c.reply(b, &model, 6, 4000)["op"] == "mixed");
  c.send({{"op", "mix"}});
  b.setDone(100);
  r = c.reply(b, &model, 100, 1000);
  CHECK(r == json{{"op", "mixed"}, {"round", 100}, {"done", true}});
  c.send({{"op", "mix"}});
  CHECK(c.reply(b, &model, 100, 1000)["done"] == true);
  CHECK(!b.hasRequest());
}

TEST_CASE("a trainer that is gone - silent or replaced no longer drives rounds") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{0.0, 0.0}};
  SUBCASE("its connection closes") {
    {
      Client c(b.endpoint());
      c.send(attachMsg(2));
      REQUIRE(c.reply(b, &model, 0)["op"] == "attached");
      CHECK(b.attached(0));
    }  // the socket closes, as when the process dies
    for (int i = 0; i < 400 && b.stateName(0) != "detached"; ++i) {
      b.poll(0, &model, 0);
      b.waitReadable(5);
    }
    CHECK(b.stateName(0) == "detached");
  }
  SUBCASE("it says nothing for idle_timeout_ms") {
    Client c(b.endpoint());
    c.send(attachMsg(2));
    REQUIRE(c.reply(b, &model, 0, 1000)["op"] == "attached");
    CHECK(b.attached(5999));
    CHECK(!b.attached(6000));
    c.send({{"op", "report"}, {"accuracy", 0.75}});
    CHECK(c.reply(b, &model, 0, 6000)["op"] == "ok");
    CHECK(b.attached(6000));
    CHECK(b.reportedAccuracy() == 0.75);
  }
  SUBCASE("another trainer attaches") {
    Client first(b.endpoint());
    first.send(attachMsg(2));
    REQUIRE(first.reply(b, &model, 0)["op"] == "attached");
    first.send({{"op", "mix"}});
    waitForRequest(b, model, 0, 0);
    Client second(b.endpoint());
    second.send(attachMsg(2));
    REQUIRE(second.reply(b, &model, 0)["op"] == "attached");
    CHECK(!b.hasRequest());  // the first one's request went with it
    CHECK(errorOf(first.reply(b, &model, 0)) == "replaced: replaced by another trainer");
    first.send({{"op", "mix"}});
    CHECK(errorOf(first.reply(b, &model, 0)) == "not_attached: not attached: send attach first");
  }
  SUBCASE("it detaches") {
    Client c(b.endpoint());
    c.send(attachMsg(2));
    REQUIRE(c.reply(b, &model, 0)["op"] == "attached");
    c.send({{"op", "detach"}});
    CHECK(c.reply(b, &model, 0)["op"] == "ok");
    CHECK(b.stateName(0) == "detached");
  }
}

TEST_CASE("the shared memory is removed with the bridge - and a too long socket path is a config error") {
  TempDir d;
  std::string shm;
  {
    TrainerBridge b(options(d.path));
    Vec model{{0.0}};
    Client c(b.endpoint());
    c.send(attachMsg(1));
    shm = c.reply(b, &model, 0)["shm"];
    CHECK(fs::exists(shm));
  }
  CHECK(!fs::exists(shm));
  {
    TrainerBridge b(options(d.path));
    const auto perms = fs::status(d.path / "trainer.sock").permissions();
    CHECK((perms & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);  // owner only
  }
  // A SIGKILLed daemon's file is removed when the node starts again; a live process's is not.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  REQUIRE(dead > 0);
  REQUIRE(waitpid(dead, nullptr, 0) == dead);
  const std::string prefix = "/dev/shm/gossipd-" + std::to_string(getuid()) + "-3-";
  const std::string stale = prefix + std::to_string(dead) + "-1", live = prefix + std::to_string(getpid()) + "-999";
  for (const auto& f : {stale, live}) REQUIRE(std::ofstream(f).good());
  { TrainerBridge b(options(d.path)); }
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(live));
  fs::remove(live);
  const fs::path deep = d.path / std::string(120, 'x');
  CHECK_THROWS_AS(TrainerBridge(options(deep)), ConfigError);
}

TEST_CASE("gradient mode with a float32 trainer: the gradient is read where the trainer wrote it - and stays mapped past a detach") {
  if (kRealIsDouble) return;  // float64 state: a float32 trainer's gradient is converted (the test above)
  TempDir d;
  TrainerBridge b(options(d.path, /*gradient=*/true));
  Vec model{{1.0, 1.0, 1.0}};
  Client c(b.endpoint());
  attachMapped(b, c, model, 0);
  CHECK(!b.sharedGradient());  // no request yet
  c.grad(3)[0] = 0.5f;
  c.grad(3)[1] = -2.0f;
  c.grad(3)[2] = 8.0f;
  c.send({{"op", "grad"}, {"loss", 1.5}});
  waitForRequest(b, model, 0, 0);
  auto shared = b.sharedGradient();
  REQUIRE(shared.has_value());
  Vec g;
  CHECK(b.readRequest(model, g) == doctest::Approx(1.5));
  CHECK(g.size() == 0);  // nothing copied
  CHECK(shared->data[0] == 0.5f);
  CHECK(shared->data[2] == 8.0f);
  c.grad(3)[1] = 3.0f;  // the very memory the trainer writes
  CHECK(shared->data[1] == 3.0f);
  // The trainer leaves in the middle of the round: the bridge drops its mapping, the node's hold keeps it.
  c.send({{"op", "detach"}});
  CHECK(c.reply(b, &model, 0)["op"] == "ok");
  CHECK(b.stateName(0) == "detached");
  CHECK(shared->data[2] == 8.0f);  // still mapped (ASan or a fault would say otherwise)
  CHECK(!b.finishRound(model, 1, false));
}

TEST_CASE("model mode never reads a gradient in place") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0}};
  Client c(b.endpoint());
  attachMapped(b, c, model, 0);
  c.send({{"op", "mix"}});
  waitForRequest(b, model, 0, 0);
  CHECK(!b.sharedGradient());
}

TEST_CASE("the end of training lets go of the shared memory - the trainer's mapping keeps the model") {
  TempDir d;
  TrainerBridge b(options(d.path));
  Vec model{{1.0, 2.0}};
  Client c(b.endpoint());
  const std::string shm = attachMapped(b, c, model, 99);
  CHECK(fs::exists(shm));
  SUBCASE("after a last round that served the trainer's request") {
    c.send({{"op", "mix"}});
    waitForRequest(b, model, 99, 0);
    Vec g;
    b.readRequest(model, g);
    model = Vec{{5.0, -5.0}};  // the final mixed model
    REQUIRE(b.finishRound(model, 100, /*done=*/true));
    CHECK(c.reply(b, &model, 100) == json{{"op", "mixed"}, {"round", 100}, {"done", true}});
    CHECK(!fs::exists(shm));  // unlinked: nothing of the daemon's holds it
    CHECK(c.params()[0] == 5.0f);  // the trainer still reads the final model
    CHECK(c.params()[1] == -5.0f);
    b.setDone(100);
    c.send({{"op", "mix"}});  // a request after the end is answered at once, without the memory
    CHECK(c.reply(b, &model, 100) == json{{"op", "mixed"}, {"round", 100}, {"done", true}});
    // A trainer that attaches afterwards (to read the final model) gets a mapping of its own.
    Client late(b.endpoint());
    attachMapped(b, late, model, 100);
    CHECK(late.params()[1] == -5.0f);
  }
  SUBCASE("when the last round served no request (the trainer was away)") {
    b.setDone(100);
    CHECK(!fs::exists(shm));
    CHECK(c.params()[1] == 2.0f);  // the trainer's mapping keeps the model it was given
    b.modelChanged();
    c.send({{"op", "mix"}});  // answered with done, nothing written
    CHECK(c.reply(b, &model, 100) == json{{"op", "mixed"}, {"round", 100}, {"done", true}});
  }
}
