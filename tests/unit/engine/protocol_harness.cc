// The fault-schedule harness (protocol_harness.h). One Harness object is one seed's run: it owns the
// fake network, the nodes, the schedule and the invariant records. Everything is single-threaded and
// iterates ordered containers, so a seed replays exactly.
#include "tests/support/logistic_problem.h"
#include "tests/support/precision.h"
#include "protocol_harness.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "compressors/compressor.h"
#include "core/crc32c.h"
#include "core/rng.h"
#include "engine/round_driver.h"
#include "training/estimators.h"
#include "training/model_factory.h"
#include "training/synthetic.h"

namespace gossip::engine::harness {
namespace {

using training::Vec;

// Tolerances, with their reasons.
// (a) Both ends compute the increment of e_ij from the same doubles (yhat_i, yhat_j, w_ij, gamma/2eta) with
//     the same operations, and fl(a - b) = -fl(b - a): the shares are exact negatives. The bound allows a
//     few ulps of O(1) values in case a compiler contracts one end's expression differently (FMA); in the
//     float32 build (core/real.h) a few float ulps.
constexpr double kDualTolerance = precision::tol(1e-12, 1e-6);
// (b) row.self = 1 - sum_j w_ij in ascending order, so self + sum_j w_ij is 1 up to the rounding of at
//     most 8 additions of values in [0,1].
constexpr double kRowTolerance = 1e-14;
// sum_i d_i: each d_i accumulates its edges' increments in its own order (and subtracts a dropped edge's
// share), so the cancellation across nodes is exact only up to rounding of values of the size of d (float32
// state: ~1e-7 relative per operation, measured up to 1.5e-7 on values of 0.35 over 200 schedules).
constexpr double kSumDualTolerance = precision::tol(1e-12, 1e-5);

struct NodeKey {
  PeerId id = 0;
  Incarnation inc = 0;
  auto operator<=>(const NodeKey&) const = default;
};
std::string str(NodeKey k) { return std::to_string(k.id) + "/" + std::to_string(k.inc); }

// The problem of test_links.cc with the 2-bit LEAD codec.
struct Problem : test_support::LogisticProblem {
  explicit Problem(std::uint32_t n) : LogisticProblem(n, {.name = "lead", .bits = 2}) {}
};

enum class EventKind { Crash, Restart, Join, Cut, Heal };
struct Event {
  std::uint64_t at = 0;
  EventKind kind = EventKind::Crash;
  PeerId node = 0;
  std::set<std::pair<PeerId, PeerId>> cut;  // Cut / Heal: ordered pairs (both directions listed)
};

class Harness;

// The algorithm as the engine sees it: forwards everything to Prox-LEAD and shows every apply to the
// harness (what was mixed, with which weights, and the dual shares after it). No behaviour of its own.
class Observed final : public algo::Algorithm {
 public:
  Observed(std::unique_ptr<algo::Algorithm> inner, Harness& h, NodeKey self) : in_(std::move(inner)), h_(h), self_(self) {}
  std::string_view name() const override { return in_->name(); }
  bool stateless() const override { return in_->stateless(); }
  Vec& x() override { return in_->x(); }
  const Vec& x() const override { return in_->x(); }
  bool needsStartStep() const override { return in_->needsStartStep(); }
  void startStep(const algo::GradRef& g, double lr) override { in_->startStep(g, lr); }
  void noteLoss(double loss) override { in_->noteLoss(loss); }
  void prepare(Round t, const algo::GradRef& g, double lr, compress::Encoded& out) override { in_->prepare(t, g, lr, out); }
  void apply(Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row) override;
  std::span<const Real> publicState() const override { return in_->publicState(); }
  void addEdge(algo::EdgeKey j, std::span<const Real> pub) override { in_->addEdge(j, pub); }
  void dropEdge(algo::EdgeKey j) override { in_->dropEdge(j); }
  std::vector<algo::EdgeKey> edges() const override { return in_->edges(); }
  std::size_t edgeCount() const override { return in_->edgeCount(); }
  void save(ByteWriter& w) const override { in_->save(w); }
  void load(ByteReader& r) override { in_->load(r); }
  const Vec* dual() const override { return in_->dual(); }
  const Vec* edgeDual(PeerId j) const override { return in_->edgeDual(j); }

 private:
  std::unique_ptr<algo::Algorithm> in_;
  Harness& h_;
  NodeKey self_;
};

class HarnessTransport final : public Transport {
 public:
  HarnessTransport(Harness& h, PeerId self) : h_(h), self_(self) {}
  void send(PeerId to, Bytes header, SharedBytes payload) override;
  bool receive(RawFrame& out) override;

 private:
  Harness& h_;
  PeerId self_;
};

class Harness {
 public:
  explicit Harness(const HarnessOptions& o) : o_(o), problem_(8), sched_(o.seed), run_(o.seed ^ 0x5eed5eed5eedull) {
    topo_.kind = topology::Kind::Ring;
    topo_.extra = static_cast<unsigned>(sched_.below(2));  // degree 2, or 4 (K5 on five nodes)
    makeSchedule();
  }

  HarnessResult run();

  // ---- called by Observed (inside LinkedEngine::endRound) ----
  void checkApply(NodeKey i, Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row);
  void afterApply(NodeKey i, Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row,
                  const algo::Algorithm& a);
  void rejectedApply(NodeKey i, Round t, const algo::RejectedMessage& e) {
    trace("apply rejected ", str(i), " r", t, ": ", e.what());
  }
  bool replayModel(NodeKey i, Round t) {
    if (o_.sabotage != Sabotage::ReplayModel || i.id != 0 || t < 5 || replayed_) return false;
    return replayed_ = true;
  }
  // ---- called by HarnessTransport ----
  void send(PeerId from, PeerId to, Bytes header, SharedBytes payload);
  bool receive(PeerId id, RawFrame& out);

 private:
  struct Live {
    NodeKey key;
    std::unique_ptr<HarnessTransport> transport;
    std::unique_ptr<LinkedEngine> engine;
    std::unique_ptr<RoundDriver> driver;
  };
  struct Queued {
    Bytes header;
    SharedBytes payload;
    std::uint64_t at = 0;
  };
  using Row = std::map<NodeKey, double>;

  void makeSchedule();
  void add(PeerId id, Incarnation inc);
  void crash(PeerId id);
  View truth() const;
  void membershipChanged(PeerId subject);
  void fireDue();
  void deliver();
  void recordLinks(const Live& n);
  bool agreedAt(NodeKey a, NodeKey b, Round t) const;
  bool alive(NodeKey k) const {
    const auto it = nodes_.find(k.id);
    return it != nodes_.end() && it->second.key == k;
  }
  bool finished() const;
  void endChecks();
  std::string dump() const;
  static std::string linksOf(const LinkedEngine& e);
  // GOSSIP_PROTOCOL_TRACE=1: every frame received, view installed and round begun or mixed, on stderr (for
  // reading a failing seed's causal chain; off in ctest).
  template <class... A>
  void trace(const A&... parts) {
    if (!trace_) return;
    std::cerr << "t=" << now_ << " ";
    (std::cerr << ... << parts);
    std::cerr << "\n";
  }
  static const char* kindName(FrameKind k) {
    switch (k) {
      case FrameKind::Model: return "model";
      case FrameKind::EdgeAsk: return "ask";
      case FrameKind::EdgePart: return "part";
      case FrameKind::Ack: return "ack";
      case FrameKind::EdgeHello: return "hello";
      case FrameKind::EdgeClose: return "close";
      default: return "other";
    }
  }
  template <class... A>
  void fail(const A&... parts) {
    if (!result_.ok) return;
    std::ostringstream s;
    s << "seed " << o_.seed << " step " << step_ << " (t=" << now_ << " ms): ";
    (s << ... << parts);
    result_.ok = false;
    result_.failure = s.str();
  }

  HarnessOptions o_;
  Problem problem_;
  Rng sched_;  // the schedule (drawn up front)
  Rng run_;    // the run's choices: delays, losses, delivery and stepping order
  topology::TopologyParams topo_;
  HarnessResult result_;
  std::uint64_t now_ = 0, step_ = 0;

  std::map<PeerId, Live> nodes_;
  std::map<PeerId, Incarnation> lastInc_;
  std::vector<Event> events_;  // sorted by time
  std::size_t nextEvent_ = 0;
  std::multimap<std::uint64_t, NodeKey> viewUpdates_;  // detection: when each survivor installs the truth
  std::set<std::pair<PeerId, PeerId>> cut_;
  std::map<std::tuple<PeerId, PeerId, int>, std::deque<Queued>> queues_;  // (from, to, channel)
  std::map<PeerId, std::deque<RawFrame>> inbox_;
  bool replayed_ = false;
  bool trace_ = std::getenv("GOSSIP_PROTOCOL_TRACE") != nullptr;

  // Invariant records.
  std::map<std::pair<NodeKey, NodeKey>, std::map<Round, Round>> agreed_;  // (self, peer) -> start -> end
  std::map<std::pair<NodeKey, Round>, std::uint32_t> sentCrc_;           // model payload sent for a round
  std::set<std::tuple<NodeKey, NodeKey, Round>> modelSent_;              // (sender, receiver, round)
  std::map<std::tuple<NodeKey, NodeKey, Round>, int> applied_;           // (receiver, sender, round)
  std::map<Round, std::map<NodeKey, Row>> rows_;                          // rows by round, by node
  std::map<std::tuple<NodeKey, NodeKey, Round>, Vec> shares_;             // e_ij after round r, one end so far
};

void Observed::apply(Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row) {
  // Checked and recorded only once the apply returned: an apply that refuses a message (RejectedMessage)
  // leaves the node untouched, and the engine calls it again without that message ("Transactional apply",
  // docs/engine.md). Recorded before the apply, as it was, the refused attempt counted every other
  // neighbour's message once and the retry a second time: "applied twice" with nothing applied twice.
  try {
    in_->apply(t, msgs, row);
  } catch (const algo::RejectedMessage& e) {
    h_.rejectedApply(self_, t, e);
    throw;
  }
  if (h_.replayModel(self_, t) && !msgs.empty()) {
    std::vector<algo::Incoming> twice(msgs.begin(), msgs.end());
    twice.push_back(msgs.front());
    h_.checkApply(self_, t, twice, row);
  } else {
    h_.checkApply(self_, t, msgs, row);
  }
  h_.afterApply(self_, t, msgs, row, *in_);
}

void HarnessTransport::send(PeerId to, Bytes header, SharedBytes payload) {
  h_.send(self_, to, std::move(header), std::move(payload));
}
bool HarnessTransport::receive(RawFrame& out) { return h_.receive(self_, out); }

// ---------------------------------------------------------------------------------------------------
// Schedule

void Harness::makeSchedule() {
  const std::uint32_t n0 = 5 + static_cast<std::uint32_t>(sched_.below(4));  // 5..8 nodes at the start
  std::set<PeerId> up, down;
  PeerId nextId = n0;
  for (PeerId i = 0; i < n0; ++i) up.insert(i);
  const auto pick = [&](const std::set<PeerId>& s) { return *std::next(s.begin(), static_cast<long>(sched_.below(s.size()))); };
  std::uint64_t at = 0;
  const std::uint64_t count = 2 + sched_.below(4);
  std::ostringstream log;
  log << n0 << " nodes, ring" << (topo_.extra ? " +1 each side" : "") << "\n";
  for (std::uint64_t k = 0; k < count; ++k) {
    at += 20 + sched_.below(150);
    Event e;
    e.at = at;
    std::vector<EventKind> can{EventKind::Cut};
    if (up.size() > 3) can.push_back(EventKind::Crash);
    if (!down.empty()) can.push_back(EventKind::Restart);
    if (nextId < 8 && up.size() < 8) can.push_back(EventKind::Join);
    e.kind = can[sched_.below(can.size())];
    switch (e.kind) {
      case EventKind::Crash:
        e.node = pick(up);
        up.erase(e.node);
        down.insert(e.node);
        log << at << " ms: crash " << e.node << "\n";
        break;
      case EventKind::Restart:
        e.node = pick(down);
        down.erase(e.node);
        up.insert(e.node);
        log << at << " ms: restart " << e.node << " (new incarnation)\n";
        break;
      case EventKind::Join:
        e.node = nextId++;
        up.insert(e.node);
        log << at << " ms: join " << e.node << "\n";
        break;
      default: {
        std::vector<PeerId> a, b;
        for (PeerId i : up) (sched_.uniform() < 0.5 ? a : b).push_back(i);
        if (a.empty() || b.empty()) continue;
        for (PeerId i : a)
          for (PeerId j : b) {
            e.cut.insert({i, j});
            e.cut.insert({j, i});
          }
        Event heal = e;
        heal.kind = EventKind::Heal;
        heal.at = at + 30 + sched_.below(250);
        events_.push_back(heal);
        log << at << " ms: partition {";
        for (PeerId i : a) log << ' ' << i;
        log << " } | {";
        for (PeerId j : b) log << ' ' << j;
        log << " } until " << heal.at << " ms\n";
      }
    }
    events_.push_back(std::move(e));
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& x, const Event& y) { return x.at < y.at; });
  result_.schedule = log.str();
  for (PeerId i = 0; i < n0; ++i) add(i, 0);
  for (auto& [id, n] : nodes_) n.engine->setMembers(truth(), 0, 0);
}

void Harness::add(PeerId id, Incarnation inc) {
  algo::AlgorithmParams ap;
  ap.name = "prox_lead";
  ap.gamma = 1.0;
  ap.incarnation = inc;
  const NodeKey key{id, inc};
  const Vec x0 = Vec::Zero(static_cast<Eigen::Index>(problem_.model->dim()));
  auto a = std::make_unique<Observed>(algo::makeAlgorithm(ap, *problem_.comp, id, x0), *this, key);
  auto est = training::makeEstimator({.kind = "full"}, *problem_.model, problem_.data, problem_.partition[id], 1);
  algo::NodeSchedule sched;
  sched.lr = [](Round) { return 0.2; };
  Live n;
  n.key = key;
  n.transport = std::make_unique<HarnessTransport>(*this, id);
  n.engine = std::make_unique<LinkedEngine>(id, inc, std::make_unique<algo::Node>(id, std::move(a), std::move(est), sched),
                                            *n.transport,
                                            // Edge set-up in several chunks of a few values, pulled in small windows, so that
                                            // lost asks and parts leave holes the fetch must ask for again (engine/edge_fetch.cc).
                                            LinkOptions{.topology = topo_, .retransmit_ms = 20, .hello_timeout_ms = 50, .hello_retry_ms = 5,
                                                        .edge_fetch = {.chunk_values = 3, .request_chunks = 2, .window_chunks = 4,
                                                                       .silence_ms = 60, .first_silence_ms = 40}});
  n.driver = std::make_unique<RoundDriver>(
      *n.engine, RoundDriverOptions{.rounds = o_.target, .barrier = StartBarrier::EveryRound});
  inbox_[id];
  lastInc_[id] = inc;
  nodes_[id] = std::move(n);
}

void Harness::crash(PeerId id) {
  nodes_.erase(id);
  inbox_.erase(id);
  std::erase_if(queues_, [&](const auto& kv) { return std::get<1>(kv.first) == id; });  // lost with the process
}

View Harness::truth() const {
  View v;
  for (const auto& [id, n] : nodes_) v.push_back({id, n.key.inc});
  return v;
}

void Harness::membershipChanged(PeerId subject) {
  for (const auto& [id, n] : nodes_)
    if (id != subject) viewUpdates_.emplace(now_ + 10 + run_.below(150), n.key);
}

void Harness::fireDue() {
  for (; nextEvent_ < events_.size() && events_[nextEvent_].at <= now_; ++nextEvent_) {
    const Event& e = events_[nextEvent_];
    trace("event ", int(e.kind), " node ", e.node);
    switch (e.kind) {
      case EventKind::Crash:
        crash(e.node);
        ++result_.crashes;
        membershipChanged(e.node);
        break;
      case EventKind::Restart:
      case EventKind::Join: {
        Round base = 0;
        for (const auto& [id, n] : nodes_) base = std::max(base, n.engine->nextRound());
        const Incarnation inc = e.kind == EventKind::Join ? 0 : lastInc_.at(e.node) + 1;
        add(e.node, inc);
        nodes_.at(e.node).engine->setMembers(truth(), base, now_);  // the newcomer knows the view at once
        ++(e.kind == EventKind::Join ? result_.joins : result_.restarts);
        membershipChanged(e.node);
        break;
      }
      case EventKind::Cut:
        cut_.insert(e.cut.begin(), e.cut.end());
        ++result_.partitions;
        break;
      case EventKind::Heal:
        for (const auto& p : e.cut) cut_.erase(p);
        break;
    }
  }
  while (!viewUpdates_.empty() && viewUpdates_.begin()->first <= now_) {
    const NodeKey k = viewUpdates_.begin()->second;
    viewUpdates_.erase(viewUpdates_.begin());
    if (!alive(k)) continue;
    auto& e = *nodes_.at(k.id).engine;
    if (trace_) {
      std::string v;
      for (const auto& m : truth()) v += " " + str({m.id, m.incarnation});
      trace("view ", str(k), " next ", e.nextRound(), (e.inRound() ? " (in round)" : ""), ":", v);
    }
    e.setMembers(truth(), e.nextRound(), now_);
    if (trace_) trace("  links ", str(k), ": ", linksOf(e));
  }
}

// ---------------------------------------------------------------------------------------------------
// Network

void Harness::send(PeerId from, PeerId to, Bytes header, SharedBytes payload) {
  ++result_.framesSent;
  if (!nodes_.count(to)) return;  // no process there: lost
  const FrameHeader h = decodeFrameHeader(header);
  const bool model = h.kind == FrameKind::Model;
  if (model) {
    const NodeKey s{h.sender, h.incarnation};
    sentCrc_.emplace(std::pair{s, h.round}, h.payload_crc);
    modelSent_.insert({s, nodes_.at(to).key, h.round});
    if (o_.sabotage == Sabotage::LoseForever && from == 1 && to == 0) return ++result_.lost, void();
  }
  // Edge asks and parts may be lost too: the fetch asks again for what did not come (engine/edge_fetch.cc).
  const bool droppable = model || h.kind == FrameKind::Ack || h.kind == FrameKind::EdgeAsk || h.kind == FrameKind::EdgePart;
  if (droppable && run_.uniform() < o_.lossRate) {
    trace("lost ", from, " -> ", to, " ", kindName(h.kind), " r", h.round);
    return ++result_.lost, void();
  }
  const double u = run_.uniform();
  const std::uint64_t delay = u < 0.7 ? run_.below(6) : u < 0.95 ? 5 + run_.below(25) : 30 + run_.below(90);
  auto& q = queues_[{from, to, model || h.kind == FrameKind::EdgePart ? 0 : 1}];  // the data channel, as ZeroMQ's
  const std::uint64_t at = std::max(now_ + delay, q.empty() ? 0 : q.back().at);
  if (droppable && run_.uniform() < o_.duplicateRate) {
    ++result_.duplicated;
    q.push_back({header, payload, at});
  }
  q.push_back({std::move(header), std::move(payload), at});
}

bool Harness::receive(PeerId id, RawFrame& out) {
  auto it = inbox_.find(id);
  if (it == inbox_.end() || it->second.empty()) return false;
  out = std::move(it->second.front());
  it->second.pop_front();
  if (trace_) {
    const FrameHeader h = decodeFrameHeader(out.header);
    std::string extra;
    if ((h.kind == FrameKind::EdgeHello || h.kind == FrameKind::EdgeClose) && out.payload && out.payload->size() == 8) {
      std::uint64_t p = 0;
      for (int b = 7; b >= 0; --b) p = (p << 8) | std::to_integer<std::uint64_t>((*out.payload)[static_cast<std::size_t>(b)]);
      extra = " proposal " + std::to_string(p);
    }
    trace("recv ", id, " <- ", h.sender, "/", h.incarnation, " ", kindName(h.kind), " r", h.round, extra,
          h.kind == FrameKind::Model ? " deg " + std::to_string(h.degree) : std::string());
  }
  return true;
}

void Harness::deliver() {
  std::vector<std::tuple<PeerId, PeerId, int>> ready;
  for (const auto& [k, q] : queues_)
    if (!q.empty() && q.front().at <= now_ && !cut_.count({std::get<0>(k), std::get<1>(k)})) ready.push_back(k);
  for (std::size_t k = ready.size(); k > 1; --k) std::swap(ready[k - 1], ready[run_.below(k)]);
  for (const auto& k : ready) {
    auto& q = queues_.at(k);
    while (!q.empty() && q.front().at <= now_ && run_.uniform() < 0.8) {
      inbox_.at(std::get<1>(k)).push_back({std::move(q.front().header), std::move(q.front().payload), {}});
      q.pop_front();
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Invariants

void Harness::recordLinks(const Live& n) {
  if (o_.sabotage == Sabotage::ForgetAgreement && n.key.id == 0) return;
  for (const auto& l : n.engine->links()) {
    if (!l.scheduled) continue;
    auto& starts = agreed_[{n.key, NodeKey{l.peer, l.incarnation}}];
    auto [it, fresh] = starts.emplace(l.start, l.end);
    if (!fresh) it->second = std::min(it->second, l.end);
  }
}

bool Harness::agreedAt(NodeKey a, NodeKey b, Round t) const {
  const auto it = agreed_.find({a, b});
  if (it == agreed_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const auto& se) { return se.first <= t && t < se.second; });
}

void Harness::checkApply(NodeKey i, Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row) {
  if (!result_.ok) return;
  ++result_.appliesChecked;
  recordLinks(nodes_.at(i.id));  // agreements made in this very step count
  // (b) the row is stochastic.
  double self = row.self, sum = row.self;
  std::vector<std::pair<PeerId, double>> ws = row.neighbors;
  if (o_.sabotage == Sabotage::SkewWeight && i.id == 0 && !ws.empty()) ws.front().second *= 1.01;
  if (!(self >= 0.0 && self <= 1.0)) fail("(b) node ", str(i), " round ", t, ": self weight ", self, " outside [0,1]");
  Row mine;
  for (const auto& [j, w] : ws) {
    sum += w;
    if (!(w >= 0.0 && w <= 1.0)) fail("(b) node ", str(i), " round ", t, ": w_", i.id, ",", j, " = ", w, " outside [0,1]");
    // (d) exactly one message from each mixed neighbour, the one it sent for this round.
    const algo::Incoming* m = nullptr;
    int count = 0;
    for (const auto& in : msgs)
      if (in.from == j) m = &in, ++count;
    if (count != 1) {
      fail("(d) node ", str(i), " round ", t, ": ", count, " messages from neighbour ", j, " in its row (exactly 1)");
      return;
    }
    const NodeKey jk{j, m->incarnation};
    const auto sent = sentCrc_.find({jk, t});
    if (sent == sentCrc_.end())
      fail("(d) node ", str(i), " round ", t, ": mixes a round-", t, " message ", str(jk), " never sent");
    else if (sent->second != crc32c(m->payload))
      fail("(d) node ", str(i), " round ", t, ": the message from ", str(jk), " is not the one it sent for round ", t);
    if (++applied_[{i, jk, t}] != 1)
      fail("(d) node ", str(i), " applies round ", t, " of ", str(jk), " for the ", applied_[{i, jk, t}], "th time");
    // (c) both ends agreed this edge for round t.
    if (!agreedAt(i, jk, t)) fail("(c) node ", str(i), " mixes ", str(jk), " in round ", t, " without its own agreement");
    if (!agreedAt(jk, i, t))
      fail("(c) node ", str(i), " mixes ", str(jk), " in round ", t, ", which ", str(jk), " never agreed for that round");
    mine[jk] = w;
  }
  if (std::abs(sum - 1.0) > kRowTolerance)
    fail("(b) node ", str(i), " round ", t, ": row sums to 1 ", (sum >= 1 ? "+ " : "- "), std::abs(sum - 1.0));
  // (b) symmetry against every alive node that mixed round t already.
  auto& rows = rows_[t];
  for (const auto& [k, rk] : rows) {
    if (k == i || !alive(k)) continue;
    const auto a = mine.find(k);
    const auto b = rk.find(i);
    if ((a == mine.end()) != (b == rk.end()))
      fail("(b) round ", t, ": ", str(a == mine.end() ? k : i), " mixed ", str(a == mine.end() ? i : k), " but ",
           str(a == mine.end() ? i : k), " did not mix it (both alive)");
    else if (a != mine.end() && a->second != b->second)
      fail("(b) round ", t, ": w_", i.id, ",", k.id, " = ", a->second, " at ", str(i), " but ", b->second, " at ", str(k));
  }
  rows[i] = std::move(mine);
  ++result_.rowsChecked;
}

void Harness::afterApply(NodeKey i, Round t, std::span<const algo::Incoming> msgs, const topology::MixingRow& row,
                         const algo::Algorithm& a) {
  if (!result_.ok) return;
  for (const auto& [j, w] : row.neighbors) {
    Incarnation inc = 0;
    for (const auto& in : msgs)
      if (in.from == j) inc = in.incarnation;
    const NodeKey jk{j, inc};
    const Vec* e = a.edgeDual(j);
    if (!e) return fail("(a) node ", str(i), " mixed ", str(jk), " in round ", t, " but holds no dual share for it");
    Vec mine = *e;
    if (o_.sabotage == Sabotage::FlipDualSign && i.id == 0) mine = -mine;
    const auto other = shares_.find({jk, i, t});
    if (other == shares_.end()) {
      shares_[{i, jk, t}] = std::move(mine);
      continue;
    }
    const double mismatch = (mine + other->second).lpNorm<Eigen::Infinity>();
    result_.maxDualMismatch = std::max(result_.maxDualMismatch, mismatch);
    ++result_.dualPairsChecked;
    if (mismatch > kDualTolerance)
      fail("(a) edge ", str(i), "-", str(jk), " after round ", t, ": |e_ij + e_ji| = ", mismatch, " (|e_ij| = ",
           mine.lpNorm<Eigen::Infinity>(), ")");
    shares_.erase(other);
  }
}

bool Harness::finished() const {
  if (nextEvent_ < events_.size() || !viewUpdates_.empty()) return false;
  return std::all_of(nodes_.begin(), nodes_.end(), [&](const auto& kv) {
    return !kv.second.engine->inRound() && kv.second.engine->nextRound() >= o_.target;
  });
}

void Harness::endChecks() {
  // sum_i d_i = 0 over the survivors.
  Vec sum = Vec::Zero(static_cast<Eigen::Index>(problem_.model->dim()));
  double scale = 0;
  for (const auto& [id, n] : nodes_) {
    const Vec& d = *n.engine->node().algorithm().dual();
    sum += d;
    scale = std::max<double>(scale, d.lpNorm<Eigen::Infinity>());
  }
  if (sum.lpNorm<Eigen::Infinity>() > kSumDualTolerance)
    fail("end: |sum_i d_i| = ", sum.lpNorm<Eigen::Infinity>(), " over ", nodes_.size(), " survivors (max |d_i| ", scale, ")");
  // (d) every model frame of a live edge's mixed rounds was applied exactly once.
  for (const auto& [s, r, t] : modelSent_) {
    if (!alive(s) || !alive(r)) continue;
    const auto& e = *nodes_.at(r.id).engine;
    if (e.nextRound() <= t) continue;
    for (const auto& l : e.links()) {
      if (l.peer != s.id || l.incarnation != s.inc || !l.scheduled || t < l.start || t >= l.end) continue;
      const auto it = applied_.find({r, s, t});
      const int times = it == applied_.end() ? 0 : it->second;
      if (times != 1) fail("(d) end: node ", str(r), " applied ", str(s), "'s round-", t, " message ", times, " times");
    }
  }
}

std::string Harness::linksOf(const LinkedEngine& e) {
  std::ostringstream s;
  for (const auto& l : e.links())
    s << ' ' << l.peer << '/' << l.incarnation << (l.scheduled ? " start " + std::to_string(l.start) : " proposed")
      << (l.open ? " open" : "") << (l.end == kNoRound ? "" : " end " + std::to_string(l.end)) << ';';
  return s.str();
}

std::string Harness::dump() const {
  std::ostringstream s;
  for (const auto& [id, n] : nodes_) {
    const auto& e = *n.engine;
    s << "  node " << str(n.key) << " next " << e.nextRound() << (e.inRound() ? " (in round)" : "") << " links:"
      << linksOf(e) << " view:";
    if (auto vg = e.viewGraph())
      for (const auto& m : vg->view) s << ' ' << m.id << '/' << m.incarnation;
    s << "\n";
  }
  return s.str();
}

HarnessResult Harness::run() {
  try {
    for (step_ = 0; step_ < o_.maxSteps && result_.ok; ++step_) {
      now_ += run_.below(3);
      fireDue();
      deliver();
      std::vector<PeerId> ids;
      for (const auto& [id, n] : nodes_) ids.push_back(id);
      Live& n = nodes_.at(ids[run_.below(ids.size())]);
      n.driver->pump(now_);
      const std::string before = trace_ ? linksOf(*n.engine) : std::string();
      const RoundStep st = n.driver->step(now_);
      if (trace_ && st.event == RoundEvent::Began) trace("begin ", str(n.key), " r", st.round, " links ", linksOf(*n.engine));
      if (trace_ && st.event == RoundEvent::Ended) trace("mixed ", str(n.key), " r", st.round, " links ", linksOf(*n.engine));
      if (trace_ && st.event == RoundEvent::Waiting && before != linksOf(*n.engine))
        trace("links ", str(n.key), ": ", linksOf(*n.engine));
      recordLinks(n);
      // (c) two scheduled links of one edge (same lives) name the same start round.
      for (const auto& l : n.engine->links()) {
        const NodeKey peer{l.peer, l.incarnation};
        if (!l.scheduled || !alive(peer)) continue;
        for (const auto& m : nodes_.at(l.peer).engine->links())
          if (m.peer == n.key.id && m.incarnation == n.key.inc && m.scheduled && m.start != l.start)
            fail("(c) edge ", str(n.key), "-", str(peer), ": start round ", l.start, " at ", str(n.key), " but ",
                 m.start, " at ", str(peer));
      }
      if (finished()) break;
    }
    if (result_.ok && step_ >= o_.maxSteps)
      fail("(e) liveness: the survivors did not all reach round ", o_.target, " in ", o_.maxSteps, " steps\n", dump());
    if (result_.ok) endChecks();
  } catch (const std::exception& e) {
    fail("exception: ", e.what(), "\n", dump());
  }
  result_.steps = step_;
  result_.nowMs = now_;
  for (const auto& [id, n] : nodes_) result_.retransmitted += n.engine->stats().retransmitted;
  if (!result_.ok) result_.failure += "\nschedule:\n" + result_.schedule;
  return result_;
}

}  // namespace

HarnessResult runSchedule(const HarnessOptions& options) {
  Harness h(options);
  return h.run();
}

}  // namespace gossip::engine::harness
