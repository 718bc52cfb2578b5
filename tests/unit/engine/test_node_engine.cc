// The round engine over the in-process transport: rounds run and agree with a direct computation, edges
// open by handshake, and hostile frames (bad checksums, strangers, stale incarnations, old or far-future
// rounds, duplicates, other epochs, corrupt payloads) are rejected by reason without touching the model.
#include <doctest/doctest.h>

#include <limits>

#include <deque>
#include <memory>
#include <set>

#include "tests/support/precision.h"
#include "compressors/compressor.h"
#include "core/crc32c.h"
#include "core/serial.h"
#include "engine/sync_engine.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/synthetic.h"
#include "transport/inproc/inproc.h"

using namespace gossip;
using namespace gossip::engine;

namespace {

struct Cluster {
  training::Dataset data;
  training::Partition partition;
  std::unique_ptr<training::Model> model;
  std::unique_ptr<compress::Compressor> comp;
  InprocNetwork net;
  std::map<PeerId, std::unique_ptr<InprocTransport>> transports;
  std::map<PeerId, std::unique_ptr<SyncEngine>> engines;
  std::uint64_t epoch = 0;
  Round consensusFrom = std::numeric_limits<Round>::max();  // the final consensus phase of nodes added from now on

  Cluster(std::uint32_t n, const std::string& algorithm, compress::CompressorSpec spec) {
    auto [all, part] = training::concatNodes(training::makeSyntheticLogistic(static_cast<int>(n) + 2, 30, 10, 1.0, 5));
    data = std::move(all);
    partition = std::move(part);
    model = training::makeModel({.kind = "logistic", .hidden = {}, .l1 = 0, .l2 = 0.01}, data.features(), data.classes);
    comp = compress::makeCompressor(spec);
    for (PeerId i = 0; i < n; ++i) add(i, 0, algorithm);
    view(0);
  }

  // `over` replaces the node's in-process transport (it may wrap transports[id]).
  void add(PeerId id, Incarnation inc, const std::string& algorithm, Transport* over = nullptr) {
    algo::AlgorithmParams p;
    p.name = algorithm;
    p.gamma = algorithm == "choco" ? 0.5 : 1.0;
    p.incarnation = inc;
    training::Vec x0 = training::Vec::Zero(static_cast<Eigen::Index>(model->dim()));
    auto a = algo::makeAlgorithm(p, *comp, id, x0);
    auto est = training::makeEstimator({.kind = "full"}, *model, data, partition[id], 1);
    algo::NodeSchedule sched;
    sched.lr = [](Round) { return 0.2; };
    sched.consensus_from = consensusFrom;
    if (!over) {
      net.attach(id);
      transports[id] = std::make_unique<InprocTransport>(net, id);
    }
    engines[id] = std::make_unique<SyncEngine>(id, inc, std::make_unique<algo::Node>(id, std::move(a), std::move(est), sched),
                                               over ? *over : *transports[id]);
  }

  void view(Round t) {
    View v;
    for (auto& [id, e] : engines) v.push_back({id, e->incarnation()});
    topology::TopologyParams ring;
    ring.kind = topology::Kind::Ring;
    auto vg = buildViewGraph(v, ring, topology::WeightRule::Metropolis,
                             engines.begin()->second->stateless(), ++epoch);
    for (auto& [id, e] : engines) e->setView(vg, t);
    for (int pass = 0; pass < 4; ++pass)
      for (auto& [id, e] : engines) e->drain(t);
  }

  void round(Round t) {
    for (auto& [id, e] : engines) e->beginRound(t);
    for (auto& [id, e] : engines) e->endRound(t);
  }
};

Bytes header(FrameHeader h, std::span<const std::byte> payload) {
  sealPayload(h, payload);
  Bytes b;
  encodeFrameHeader(h, b);
  return b;
}

}  // namespace

TEST_CASE("engine: replica edges open by handshake and rounds run") {
  Cluster c(5, "prox_lead", {.name = "lead", .bits = 2});
  for (auto& [id, e] : c.engines) {
    CHECK(e->edgesReady());
    CHECK(e->node().algorithm().edgeCount() == 2);
    CHECK(e->stats().control_bytes_sent > 0);
  }
  for (Round t = 0; t < 20; ++t) c.round(t);
  training::Vec sum = training::Vec::Zero(static_cast<Eigen::Index>(c.model->dim()));
  for (auto& [id, e] : c.engines) sum += *e->node().algorithm().dual();
  CHECK(sum.lpNorm<Eigen::Infinity>() < gossip::precision::tol(1e-12, 1e-5));
}

TEST_CASE("engine: a restart (new incarnation) replaces its edges at both ends") {
  Cluster c(4, "choco", {.name = "topk", .ratio = 0.5});
  for (Round t = 0; t < 5; ++t) c.round(t);
  c.engines.erase(2);
  c.net.detach(2);
  c.add(2, 1, "choco");
  c.view(5);
  for (auto& [id, e] : c.engines) {
    CHECK(e->edgesReady());
    for (const auto& k : e->node().algorithm().edges())
      if (k.id == 2) CHECK(k.incarnation == 1);
  }
  for (Round t = 5; t < 10; ++t) c.round(t);
}

TEST_CASE("engine: hostile frames are rejected by reason and leave the model untouched") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  c.round(0);
  auto& victim = *c.engines.at(0);
  const training::Vec before = victim.node().algorithm().x();

  // A well-formed payload of the right size, from a real encoding of a vector of the model's dimension.
  compress::Encoded enc;
  Rng rng(3);
  training::Vec v = training::Vec::Ones(static_cast<Eigen::Index>(c.model->dim()));
  c.comp->encode(std::span<const Real>(v.data(), static_cast<std::size_t>(v.size())), rng, enc);
  auto payload = std::make_shared<const Bytes>(enc.bytes);
  FrameHeader good;
  good.kind = FrameKind::Model;
  good.sender = 1;
  good.incarnation = 0;
  good.round = 1;
  good.epoch = static_cast<std::uint32_t>(c.epoch);

  auto inject = [&](Bytes h, SharedBytes p) { c.net.deliver(99, 0, std::move(h), std::move(p), false); };
  // 1. bad header checksum
  Bytes h = header(good, *payload);
  h[20] ^= std::byte{1};
  inject(h, payload);
  // 2. corrupt payload (a flipped bit inside a value): payload checksum
  auto flipped = std::make_shared<Bytes>(*payload);
  (*flipped)[20] ^= std::byte{0x40};
  Bytes hp = header(good, *payload);
  inject(hp, flipped);
  // 3. a stranger
  FrameHeader s = good;
  s.sender = 42;
  inject(header(s, *payload), payload);
  // 4. a stale incarnation
  FrameHeader st = good;
  st.incarnation = 7;
  inject(header(st, *payload), payload);
  // 5. an old round and 6. a far-future round
  FrameHeader old = good;
  old.round = 0;
  inject(header(old, *payload), payload);
  FrameHeader fut = good;
  fut.round = 1 + kMaxRoundsAhead + 1;
  inject(header(fut, *payload), payload);
  // 7. another epoch
  FrameHeader ep = good;
  ep.epoch += 5;
  inject(header(ep, *payload), payload);
  // 8. random bytes as a header
  Bytes junk(kFrameHeaderBytes, std::byte{0x5A});
  inject(junk, payload);

  victim.drain(1);
  CHECK(victim.node().algorithm().x() == before);
  const auto& r = victim.stats().rejected;
  CHECK(r.at("bad_header_crc") == 1);
  CHECK(r.at("bad_payload_crc") == 1);
  CHECK(r.at("unknown_sender") == 1);
  CHECK(r.at("stale_incarnation") == 1);
  CHECK(r.at("late") == 1);
  CHECK(r.at("bad_round") == 1);
  CHECK(r.at("epoch_mismatch") == 1);
  CHECK(r.at("bad_magic") == 1);
  // By the id a checksummed header names (the two frames with a broken header name nobody).
  const auto& byPeer = victim.stats().rejected_by_peer;
  CHECK(byPeer.at(1).at("bad_payload_crc") == 1);
  CHECK(byPeer.at(1).at("stale_incarnation") == 1);
  CHECK(byPeer.at(1).at("late") == 1);
  CHECK(byPeer.at(42).at("unknown_sender") == 1);
  CHECK(byPeer.size() == 2);

  // 9. two copies of a valid round-1 frame from node 1, then node 1's own: the first is mixed, the two
  // later copies are rejected as duplicates when the round is assembled.
  inject(header(good, *payload), payload);
  inject(header(good, *payload), payload);
  c.round(1);
  CHECK(victim.stats().rejected.at("duplicate") == 2);
  CHECK(victim.node().algorithm().x().allFinite());
}

TEST_CASE("engine: a stateless round treats an undecodable payload as missing") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  auto& victim = *c.engines.at(0);
  // Node 1 sends a payload for a different dimension at round 0, before the real one: the real one is then
  // a duplicate, so the round mixes node 1 as missing (own value) instead.
  compress::Encoded enc;
  Rng rng(3);
  training::Vec v = training::Vec::Ones(3);
  c.comp->encode(std::span<const Real>(v.data(), 3), rng, enc);
  FrameHeader h;
  h.sender = 1;
  h.round = 0;
  h.epoch = static_cast<std::uint32_t>(c.epoch);
  c.net.deliver(1, 0, header(h, enc.bytes), std::make_shared<const Bytes>(enc.bytes), false);
  c.round(0);
  CHECK(victim.stats().rejected.at("bad_payload") == 1);
  CHECK(victim.stats().messages_missing == 1);
  CHECK(victim.node().algorithm().x().allFinite());
}

TEST_CASE("engine: an fp32 frame with a NaN or an infinity under a valid checksum is refused and x stays finite") {
  // The checksum's pass looks for non-finite values (checkPayloadPartsScan) so that D-PSGD and LEAD with
  // fp32 need not read a clean frame again; a frame with one must still be refused, wherever the value is.
  for (const std::string algorithm : {"dpsgd", "lead"}) {
    for (const std::size_t at : {std::size_t{0}, std::size_t{5}, std::size_t{10}}) {
      for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        CAPTURE(algorithm);
        CAPTURE(at);
        CAPTURE(bad);
        Cluster c(3, algorithm, {.name = "fp32"});
        auto& victim = *c.engines.at(0);
        // LEAD's first round sends nothing (its start step); a round of everyone first, then the bad frame
        // of node 1 for the next round ahead of its real one (which then counts as a duplicate).
        const Round t = victim.node().algorithm().needsStartStep() ? 1 : 0;
        if (t == 1) c.round(0);
        const auto dim = static_cast<Eigen::Index>(c.model->dim());
        REQUIRE(static_cast<Eigen::Index>(at) < dim);
        training::Vec v = training::Vec::Constant(dim, Real(0.25));
        v[static_cast<Eigen::Index>(at)] = static_cast<Real>(bad);
        compress::Encoded enc;
        Rng rng(3);
        c.comp->encode(std::span<const Real>(v.data(), static_cast<std::size_t>(dim)), rng, enc);
        FrameHeader h;
        h.sender = 1;
        h.round = t;
        h.epoch = static_cast<std::uint32_t>(c.epoch);
        c.net.deliver(1, 0, header(h, enc.bytes), std::make_shared<const Bytes>(enc.bytes), false);
        std::string refused;
        try {
          c.round(t);
        } catch (const algo::RejectedMessage& e) {
          refused = e.what();  // a replica method cannot mix its round without the message: the round stops
        }
        if (algorithm == "dpsgd")
          CHECK(victim.stats().rejected.count("bad_payload") == 1);  // mixed without it, as a missing one
        else
          CHECK(refused == "message from 1 rejected: non-finite value in fp32 payload");
        CHECK(victim.node().algorithm().x().allFinite());
      }
    }
  }
}

// Keeps every payload it sends until the caller releases it, like a zero-copy send of a large frame that
// finishes only once the peer has read it, and records every distinct payload buffer it was given.
struct HoldingTransport final : Transport {
  Transport& inner;
  std::deque<SharedBytes> held;
  // The distinct memory blocks the payloads were sent in (a held payload keeps its block alive, so an
  // address seen twice is the same block reused, not a new allocation at a freed address).
  std::set<const std::byte*> buffers;
  explicit HoldingTransport(Transport& t) : inner(t) {}
  void send(PeerId to, Bytes h, SharedBytes payload) override {
    if (payload && !payload->empty()) {
      held.push_back(payload);
      buffers.insert(payload->data());
    }
    inner.send(to, std::move(h), std::move(payload));
  }
  bool receive(RawFrame& out) override { return inner.receive(out); }
};

TEST_CASE("engine: a payload still in flight is never reused - and a steady state allocates no new buffers") {
  Cluster c(2, "dpsgd", {.name = "fp32"});
  HoldingTransport hold(*c.transports.at(0));
  c.add(0, 1, "dpsgd", &hold);  // node 0 again, as a new incarnation, over the holding transport
  c.view(0);
  std::vector<Bytes> copies;
  for (Round t = 0; t < 30; ++t) {
    c.round(t);
    // Each round's frame is still held when the next round begins, and released after it.
    while (hold.held.size() > 1) {
      CHECK(*hold.held.front() == copies.at(copies.size() - 1));  // unchanged while it was in flight
      hold.held.pop_front();
    }
    copies.push_back(*hold.held.back());
  }
  // One block in flight, one being encoded into, one back in the pool: later rounds rotate them (a fresh
  // block costs a zero-fill and page faults on every round of a large model).
  MESSAGE("distinct payload blocks over 30 rounds: ", hold.buffers.size());
  CHECK(hold.buffers.size() <= 3);
}

// Hands every model frame it receives over in parts, as the ZeroMQ transport hands a large one (engine/
// transport.h, PayloadParts): the payload copied into separate blocks of irregular sizes (a first one of 12
// bytes: the codec header and one value), or, with split false, passes frames through.
struct PartsTransport final : Transport {
  struct Blocks final : PayloadParts {
    std::vector<Bytes> blocks;
  };
  Transport& inner;
  bool split;
  std::uint64_t splitFrames = 0;
  PartsTransport(Transport& t, bool s) : inner(t), split(s) {}
  void send(PeerId to, Bytes h, SharedBytes payload) override { inner.send(to, std::move(h), std::move(payload)); }
  bool receive(RawFrame& out) override {
    if (!inner.receive(out)) return false;
    if (!split || !peekIsKind(out.header, FrameKind::Model) || !out.payload || out.payload->size() < 16) return true;
    auto b = std::make_shared<Blocks>();
    const Bytes& all = *out.payload;
    for (std::size_t at = 0, n = 12; at < all.size(); at += n, n = 4 * (1 + at % 7)) {
      const std::size_t len = std::min(n, all.size() - at);
      b->blocks.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + len));
    }
    for (const Bytes& block : b->blocks) b->parts.emplace_back(block);
    b->bytes = all.size();
    out.parts = std::move(b);
    out.payload.reset();
    ++splitFrames;
    return true;
  }
};

TEST_CASE("engine: model frames received in parts mix as the same frames in one buffer - read in place or gathered") {
  // lsgd (D-PSGD's fp32 payload and a trailer read from one buffer) and D-PSGD fp32's final consensus rounds
  // (mixArrived reads one buffer) must be gathered, though D-PSGD fp32 itself reads parts: both had every
  // message of a model above 1 MiB refused when the engine asked only the method.
  struct Case {
    const char* algorithm;
    compress::CompressorSpec spec;
    bool readsParts;
    Round consensusFrom = std::numeric_limits<Round>::max();
  };
  for (const Case& k : {Case{"dpsgd", {.name = "fp32"}, !kRealIsDouble}, Case{"lead", {.name = "fp32"}, !kRealIsDouble},
                        Case{"dpsgd", {.name = "fp16"}, false}, Case{"choco", {.name = "topk", .ratio = 0.2}, false},
                        Case{"lsgd", {.name = "fp32"}, false}, Case{"dpsgd", {.name = "fp32"}, !kRealIsDouble, 6}}) {
    CAPTURE(k.algorithm);
    CAPTURE(k.spec.name);
    CAPTURE(k.consensusFrom);
    std::vector<training::Vec> models[2];
    std::uint64_t splitFrames = 0;
    for (const bool split : {false, true}) {
      Cluster c(4, k.algorithm, k.spec);
      c.consensusFrom = k.consensusFrom;
      std::map<PeerId, std::unique_ptr<PartsTransport>> wrap;
      for (PeerId id = 0; id < 4; ++id) {
        wrap[id] = std::make_unique<PartsTransport>(*c.transports.at(id), split);
        c.add(id, 1, k.algorithm, wrap[id].get());  // every node again, as a new life over the wrapper
      }
      c.view(0);
      CHECK(c.engines.at(0)->node().algorithm().readsPayloadParts() == k.readsParts);
      for (Round t = 0; t < 12; ++t) c.round(t);
      for (auto& [id, e] : c.engines) {
        // (The first lives' frames still in flight are refused as stale: the same with and without parts.)
        for (const char* reason : {"bad_payload", "length_mismatch", "bad_payload_crc"})
          CHECK(e->stats().rejected.count(reason) == 0);
        models[split].push_back(e->node().algorithm().x());
      }
      for (auto& [id, w] : wrap) splitFrames += w->splitFrames;
    }
    CHECK(splitFrames >= 4 * 2 * 12);  // every model frame of every round went through in parts
    for (std::size_t i = 0; i < models[0].size(); ++i) CHECK((models[0][i].array() == models[1][i].array()).all());
  }
}

TEST_CASE("engine: save and load restore a node that continues bit-identically") {
  Cluster a(4, "lead", {.name = "lead", .bits = 2});
  Cluster b(4, "lead", {.name = "lead", .bits = 2});
  for (Round t = 0; t < 10; ++t) {
    a.round(t);
    b.round(t);
  }
  for (auto& [id, e] : a.engines) CHECK(b.engines.at(id)->load(e->save(10)) == 10);
  for (Round t = 10; t < 20; ++t) {
    a.round(t);
    b.round(t);
  }
  for (auto& [id, e] : a.engines) CHECK(e->node().algorithm().x() == b.engines.at(id)->node().algorithm().x());
  Bytes state = a.engines.at(1)->save(20);
  CHECK_THROWS_AS(b.engines.at(2)->load(state), DecodeError);  // another node's state
  state.resize(state.size() / 2);
  CHECK_THROWS_AS(b.engines.at(1)->load(state), DecodeError);
}

namespace {
// One State chunk as engine/state_transfer.cc lays it out.
Bytes stateChunk(std::uint64_t dim, std::uint64_t at, std::span<const Real> values) {
  Bytes b;
  ByteWriter w(b);
  w.put(dim);
  w.put(at);
  serial::putArray(w, values);
  return b;
}
// Pumps every engine's frames until no more come (a state transfer is many request/answer exchanges).
void settle(Cluster& c, Round t) {
  for (int pass = 0; pass < 64 && c.net.inFlight() > 0; ++pass)
    for (auto& [id, e] : c.engines) e->drain(t);
  REQUIRE(c.net.inFlight() == 0);
}
}  // namespace

TEST_CASE("engine: a model transfer is taken only from the peers it was asked of - once") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  c.round(0);  // the nodes' models now differ
  auto& n0 = *c.engines.at(0);
  REQUIRE(n0.node().algorithm().x() != c.engines.at(2)->node().algorithm().x());
  const training::Vec before = n0.node().algorithm().x();
  std::vector<Real> other(static_cast<std::size_t>(before.size()), Real(3));
  const Bytes body = stateChunk(other.size(), 0, other);
  FrameHeader h;
  h.kind = FrameKind::State;
  h.sender = 1;
  h.epoch = static_cast<std::uint32_t>(c.epoch);
  // Unrequested: refused.
  c.net.deliver(1, 0, header(h, body), std::make_shared<const Bytes>(body), false);
  n0.drain(1);
  CHECK(n0.stats().rejected.at("unrequested_state") == 1);
  CHECK(n0.node().algorithm().x() == before);
  // Requested from node 2: node 1's offer is still refused, node 2's answer is taken.
  n0.requestState(2, 1);
  c.net.deliver(1, 0, header(h, body), std::make_shared<const Bytes>(body), false);
  settle(c, 1);
  CHECK(n0.stats().rejected.at("unrequested_state") == 2);
  CHECK(n0.node().algorithm().x() == c.engines.at(2)->node().algorithm().x());
  CHECK(n0.takeStateRound() == Round{1});
  // Once: the fetch is over, a repeated answer is refused.
  c.net.deliver(2, 0, header([&] { auto h2 = h; h2.sender = 2; return h2; }(), body), std::make_shared<const Bytes>(body), false);
  n0.drain(1);
  CHECK(n0.stats().rejected.at("unrequested_state") == 3);
  CHECK(n0.node().algorithm().x() == c.engines.at(2)->node().algorithm().x());
}

TEST_CASE("engine: a model transfer arrives in chunks on the receiver's grid - installed only whole") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  c.round(0);
  auto& n0 = *c.engines.at(0);
  const training::Vec before = n0.node().algorithm().x();
  const auto dim = static_cast<std::size_t>(before.size());
  REQUIRE(dim >= 9);
  std::vector<Real> other(dim);
  for (std::size_t i = 0; i < dim; ++i) other[i] = static_cast<Real>(3.0 + static_cast<double>(i));
  FrameHeader h;
  h.kind = FrameKind::State;
  h.sender = 1;
  h.round = 7;
  h.epoch = static_cast<std::uint32_t>(c.epoch);
  auto send = [&](FrameHeader fh, Bytes body) {
    Bytes head = header(fh, body);  // before body is moved from
    c.net.deliver(1, 0, std::move(head), std::make_shared<const Bytes>(std::move(body)), false);
    n0.drain(1);
  };
  auto chunk = [&](std::size_t at, std::size_t n) { return stateChunk(dim, at, std::span<const Real>(other).subspan(at, n)); };
  n0.setStateFetch({.chunk_values = 4, .request_chunks = 1, .window_chunks = 1});
  n0.requestState(1, 1);  // node 1 is never drained: its answer is the one forged here
  const std::size_t last = (dim - 1) / 4 * 4;  // first value of the last chunk

  SUBCASE("chunks in any order; nothing changes until the last one") {
    for (std::size_t at = 4; at < dim; at += 4) send(h, chunk(at, std::min<std::size_t>(4, dim - at)));
    CHECK(n0.node().algorithm().x() == before);
    CHECK_FALSE(n0.takeStateRound());
    CHECK(n0.stateProgress()->values_have == dim - 4);
    send(h, chunk(0, 4));
    CHECK(n0.node().algorithm().x() == Eigen::Map<const training::Vec>(other.data(), before.size()));
    CHECK(n0.takeStateRound() == Round{7});
    CHECK(n0.stats().states_received == 1);
    CHECK_FALSE(n0.stateProgress());
  }
  SUBCASE("chunks of several rounds are stitched; the node continues from the highest") {
    FrameHeader later = h;
    later.round = 9;
    send(later, chunk(0, 4));
    for (std::size_t at = 4; at < dim; at += 4) send(h, chunk(at, std::min<std::size_t>(4, dim - at)));
    CHECK(n0.takeStateRound() == Round{9});
  }
  SUBCASE("chunks off the grid, of another length, another dimension or not finite are rejected") {
    send(h, chunk(2, 4));                                       // not on the grid of 4
    send(h, chunk(0, 3));                                       // a chunk of the grid is 4 values
    send(h, stateChunk(dim, last + 4, std::span<const Real>(other).subspan(0, 1)));  // past the end
    send(h, stateChunk(dim + 1, 0, std::span<const Real>(other).subspan(0, 4)));
    std::vector<Real> bad = {1.0f, std::nanf(""), 0.0f, 0.0f};
    send(h, stateChunk(dim, 0, bad));
    CHECK(n0.stats().rejected.at("bad_state_chunk") == 3);
    CHECK(n0.stats().rejected.at("wrong_dimension") == 1);
    CHECK(n0.stats().rejected.at("non_finite") == 1);
    CHECK(n0.node().algorithm().x() == before);
    CHECK(n0.stateProgress()->values_have == 0);
  }
  SUBCASE("given up, a fetch takes no late chunk") {
    n0.cancelStateFetch();
    send(h, chunk(0, 4));
    CHECK(n0.stats().rejected.at("unrequested_state") == 1);
  }
}

TEST_CASE("engine: a real neighbour's chunked answer installs its model exactly") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  c.round(0);
  auto& n0 = *c.engines.at(0);
  auto& n2 = *c.engines.at(2);
  n0.setStateFetch({.chunk_values = 3, .request_chunks = 2, .window_chunks = 4});
  n0.requestState(2, 1);
  settle(c, 1);
  CHECK(n0.node().algorithm().x() == n2.node().algorithm().x());
  CHECK(n2.stats().states_sent == 1);
  CHECK(n0.stats().states_received == 1);
  CHECK(n0.stats().frames_received >= (static_cast<std::uint64_t>(n2.node().algorithm().x().size()) + 2) / 3);
}

TEST_CASE("engine: a model is fetched from several neighbours at once - a silent one's chunks go to the others") {
  Cluster c(3, "dpsgd", {.name = "fp32"});
  c.round(0);
  auto& n0 = *c.engines.at(0);
  const training::Vec x1 = c.engines.at(1)->node().algorithm().x();
  const training::Vec x2 = c.engines.at(2)->node().algorithm().x();
  REQUIRE(x1 != x2);
  const auto dim = static_cast<std::size_t>(x1.size());
  const std::size_t C = 2;
  REQUIRE(dim >= 4 * C);
  n0.setStateFetch({.chunk_values = C, .request_chunks = 1, .window_chunks = 1, .silence_ms = 100, .first_silence_ms = 100});
  n0.stepStateFetch(1000);
  const std::vector<PeerId> both = {1, 2};

  SUBCASE("both serve: every chunk is one of theirs, and both sent some") {
    n0.requestState(both, 1);
    settle(c, 1);
    REQUIRE(n0.takeStateRound() == Round{1});
    const training::Vec& x = n0.node().algorithm().x();
    std::size_t from1 = 0, from2 = 0;
    for (std::size_t at = 0; at < dim; at += C) {
      const auto n = static_cast<Eigen::Index>(std::min(C, dim - at));
      const auto i = static_cast<Eigen::Index>(at);
      const bool is1 = x.segment(i, n) == x1.segment(i, n), is2 = x.segment(i, n) == x2.segment(i, n);
      CHECK((is1 || is2));
      from1 += is1;
      from2 += is2;
    }
    CHECK(from1 > 0);
    CHECK(from2 > 0);
    CHECK(c.engines.at(1)->stats().states_sent + c.engines.at(2)->stats().states_sent >= 1);
  }
  SUBCASE("node 1 falls silent: after silence_ms its chunk goes to node 2, which serves all the rest") {
    n0.requestState(both, 1);
    // Only node 2 answers; node 1's requests wait unread.
    for (int pass = 0; pass < 64; ++pass) {
      c.engines.at(2)->drain(1);
      n0.drain(1);
    }
    CHECK_FALSE(n0.takeStateRound());
    const auto stuck = n0.stateProgress();
    REQUIRE(stuck);
    CHECK(stuck->values_have == dim - C);  // all but node 1's one chunk
    CHECK(stuck->sources_serving == 1);
    n0.stepStateFetch(1000 + 99);  // not yet silent long enough
    c.engines.at(2)->drain(1);
    n0.drain(1);
    CHECK_FALSE(n0.takeStateRound());
    n0.stepStateFetch(1000 + 100);
    c.engines.at(2)->drain(1);
    n0.drain(1);
    REQUIRE(n0.takeStateRound() == Round{1});
    CHECK(n0.node().algorithm().x() == x2);
    // Node 1's late answer, when it finally reads its requests, is refused: the fetch is over.
    settle(c, 1);
    CHECK(n0.stats().rejected.at("unrequested_state") >= 1);
    CHECK(n0.node().algorithm().x() == x2);
  }
}

TEST_CASE("engine: a state request off the model or with chunks of 0 or too many values is refused") {
  Cluster c(2, "dpsgd", {.name = "fp32"});
  auto& n1 = *c.engines.at(1);
  const auto dim = static_cast<std::uint64_t>(n1.node().algorithm().x().size());
  auto ask = [&](std::uint64_t at, std::uint64_t count, std::uint64_t chunk) {
    Bytes b;
    ByteWriter w(b);
    w.put(at);
    w.put(count);
    w.put(chunk);
    FrameHeader h;
    h.kind = FrameKind::StateRequest;
    h.sender = 0;
    h.epoch = static_cast<std::uint32_t>(c.epoch);
    c.net.deliver(0, 1, header(h, b), std::make_shared<const Bytes>(b), false);
    n1.drain(0);
  };
  ask(0, dim, 0);           // chunks of 0 values
  ask(1, dim, dim);         // past the end
  ask(0, dim, 1u << 23);    // chunks larger than a request may ask for
  ask(0, 1, 1);             // fine: one chunk of one value
  CHECK(n1.stats().rejected.at("bad_state_request") == 3);
  CHECK(n1.stats().states_sent == 1);
}
