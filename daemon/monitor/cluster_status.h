#pragma once
// What every node knows about every other node's progress, for /cluster and the dashboard
// (docs/monitoring.md). Each node summarises itself (round, loss, accuracy, bytes, ...) about once a
// second and pushes its whole table to a couple of random live members (FrameKind::Status frames);
// a receiver keeps, per node, the newest summary by (incarnation, sequence number). Push gossip reaches
// all n nodes in O(log n) periods, so any one node's /cluster shows everyone, eventually consistent.
//
// This is monitoring data, not protocol state: nothing in training reads it. A peer can claim anything
// about another node here (the transport binds a sender's id to its key with security on, not the
// summaries it relays); decoding is bounded and strict, so a hostile table costs at most its bytes, and
// the daemon merges only summaries of ids its membership knows, so made-up ids cannot fill the table.
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/types.h"
#include "daemon/monitor/node_state.h"

namespace gossip::daemon {

struct NodeSummary {
  PeerId id = 0;
  Incarnation incarnation = 0;
  std::uint64_t seq = 0;           // bumped by the origin for each new summary of one incarnation
  std::uint8_t state = 0;          // a NodeState (node_state.h)
  Round round = 0;
  Round rounds = 0;
  float loss = 0;                  // NaN: not known yet
  float disagreement = std::numeric_limits<float>::quiet_NaN();  // Algorithm::disagreement() of the last mixed round; NaN: none yet
  float accuracy = -1;             // < 0: not evaluated yet
  float compression_ratio = 0;     // 0: nothing sent yet
  float rounds_per_second = 0;
  std::uint32_t neighbors = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t states_sent = 0;
  std::uint64_t states_received = 0;
};

// A double for a float field of the summary: NaN stays NaN ("not known"); values beyond float's range
// (a diverged loss, say) are clamped so the summary is still accepted and shows a huge number instead of
// vanishing from every page exactly when it matters.
float summaryFloat(double v);


class ClusterStatus {
 public:
  static constexpr std::size_t kMaxEntries = 4096;  // per message and in the table
  static constexpr std::uint8_t kVersion = 2;  // 2: disagreement added

  explicit ClusterStatus(PeerId self) : self_(self) {}

  // Replaces this node's own summary (its seq is set here, one above the last).
  void updateSelf(NodeSummary s, std::uint64_t nowMs);
  // Keeps each entry that is newer than what the table holds for that id. Returns how many were taken.
  std::size_t merge(std::span<const NodeSummary> entries, std::uint64_t nowMs);

  struct Entry {
    NodeSummary s;
    std::uint64_t receivedMs = 0;  // local time this summary arrived (its age on /cluster)
  };
  const std::map<PeerId, Entry>& entries() const { return table_; }
  const Entry* find(PeerId id) const;

  // The whole table (self first), at most kMaxEntries entries.
  Bytes encode() const;
  // Throws DecodeError on anything malformed (version, count, truncation, trailing bytes, bad values).
  static std::vector<NodeSummary> decode(std::span<const std::byte> payload);

 private:
  PeerId self_;
  std::uint64_t seq_ = 0;
  std::map<PeerId, Entry> table_;
};

}  // namespace gossip::daemon
