#pragma once
// A deterministic fault-schedule harness for the linked protocol (issue 27, "Must show" item 2), after
// NuRaft's FakeNetwork and FoundationDB's simulation: one 64-bit seed gives one schedule of faults, and
// the run is a pure function of that seed (fake clock, ordered containers, no threads).
//
// What it runs: 5-8 Prox-LEAD nodes (2-bit LEAD codec, the problem of test_links.cc) in linked mode, each
// stepped through engine::RoundDriver with the production policy (StartBarrier::EveryRound).
//
// Fault model (docs/engine.md, "The fault-schedule harness"):
//  - every frame goes into a FIFO queue per (sender, receiver, channel), the channels being model frames
//    and everything else, as the ZeroMQ transport keeps order (transport/zmq/zmq_transport.h); a frame is
//    delivered after a random delay, queue heads in a random order, so the two channels and the links
//    interleave freely;
//  - model and ack frames may be lost or duplicated (the linked mode retransmits and refuses duplicates),
//    and so may the asks and parts of an edge's set-up (the receiving end asks again for what did not
//    come; edges are set up in chunks of 3 values here); the other control frames (hello, close) model a
//    reliable channel, as in InprocNetwork;
//  - partitions: a set of cut pairs whose frames are held (not delivered) for a while, shorter than the
//    failure detection: the views do not change;
//  - crashes (the engine destroyed, frames to it lost), restarts as a new incarnation and joins; every
//    other node installs the new view after its own detection delay, as membership would.
// Invariants, checked at every step (each failure names the seed, step, nodes and values):
//  (a) dual antisymmetry: once both ends of an edge mixed round r, e_ij(r) = -e_ji(r);
//  (b) weights: each row has entries in [0,1] summing to 1, and two alive ends of an edge that mixed round
//      r both have it in their row with the same weight (so W(r) is symmetric and doubly stochastic over
//      the alive view);
//  (c) agreement: a node mixes a neighbour only in a round both ends' links agreed (scheduled, start <= r
//      < end), and two scheduled links of one edge name the same start;
//  (d) exactly once: each mixed neighbour contributes exactly one message per round, the one it sent for
//      that round; at the end every model frame of a live edge's mixed rounds was applied exactly once;
//  (e) liveness: every surviving node reaches the target round within a step bound;
//  and at the end sum_i d_i = 0 over the survivors.
#include <cstdint>
#include <string>

namespace gossip::engine::harness {

// For the harness's own tests: makes the checked system wrong on purpose, to show an invariant fires.
enum class Sabotage {
  None,
  FlipDualSign,     // node 0's reported dual shares are negated (a): e_ij = +e_ji
  SkewWeight,       // node 0's first neighbour weight is reported 1% high (b)
  ForgetAgreement,  // node 0's agreements are not recorded (c): its mixing looks unagreed
  ReplayModel,      // one model message is handed to node 0's algorithm twice (d)
  LoseForever,      // every model frame from node 1 to node 0 is lost, retransmits too (e)
};

struct HarnessOptions {
  std::uint64_t seed = 1;
  std::uint64_t target = 30;        // every survivor must reach this round
  std::uint64_t maxSteps = 60000;   // liveness bound (a passing seed needs a few thousand)
  double lossRate = 0.05;           // model and ack frames
  double duplicateRate = 0.03;      // model and ack frames
  Sabotage sabotage = Sabotage::None;
};

struct HarnessResult {
  bool ok = true;
  std::string failure;   // the first violated invariant, with seed, step, nodes and values
  std::string schedule;  // the seed's fault schedule, one event a line
  std::uint64_t steps = 0, nowMs = 0;
  std::uint64_t framesSent = 0, lost = 0, duplicated = 0, retransmitted = 0;
  std::uint64_t crashes = 0, restarts = 0, joins = 0, partitions = 0;
  std::uint64_t dualPairsChecked = 0, rowsChecked = 0, appliesChecked = 0;
  double maxDualMismatch = 0;  // largest |e_ij + e_ji| seen
};

HarnessResult runSchedule(const HarnessOptions& options);

}  // namespace gossip::engine::harness
