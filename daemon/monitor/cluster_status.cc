#include "daemon/monitor/cluster_status.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace gossip::daemon {

namespace {

// (incarnation, seq) orders the summaries of one node: a restarted node (new incarnation) starts its
// sequence again and still wins over everything its earlier life sent.
bool newer(const NodeSummary& a, const NodeSummary& b) {
  return a.incarnation != b.incarnation ? a.incarnation > b.incarnation : a.seq > b.seq;
}

void put(ByteWriter& w, const NodeSummary& s) {
  w.put(s.id);
  w.put(s.incarnation);
  w.put(s.seq);
  w.put(s.state);
  w.put(s.round);
  w.put(s.rounds);
  w.put(s.loss);
  w.put(s.disagreement);
  w.put(s.accuracy);
  w.put(s.compression_ratio);
  w.put(s.rounds_per_second);
  w.put(s.neighbors);
  w.put(s.bytes_sent);
  w.put(s.states_sent);
  w.put(s.states_received);
}

static_assert(sizeof(PeerId) == 4 && sizeof(Incarnation) == 8 && sizeof(Round) == 8, "wire sizes of a status entry");
constexpr std::size_t kEntryBytes = 4 + 8 + 8 + 1 + 8 + 8 + 4 * 5 + 4 + 8 * 3;

}  // namespace

float summaryFloat(double v) {
  if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
  constexpr double kMax = std::numeric_limits<float>::max();
  return static_cast<float>(std::clamp(v, -kMax, kMax));
}

void ClusterStatus::updateSelf(NodeSummary s, std::uint64_t nowMs) {
  s.id = self_;
  s.seq = ++seq_;
  table_[self_] = {s, nowMs};
}

std::size_t ClusterStatus::merge(std::span<const NodeSummary> entries, std::uint64_t nowMs) {
  std::size_t taken = 0;
  for (const auto& s : entries) {
    if (s.id == self_) continue;  // only this node speaks for itself
    auto it = table_.find(s.id);
    if (it == table_.end()) {
      if (table_.size() >= kMaxEntries) continue;
      table_.emplace(s.id, Entry{s, nowMs});
      ++taken;
    } else if (newer(s, it->second.s)) {
      it->second = {s, nowMs};
      ++taken;
    }
  }
  return taken;
}

const ClusterStatus::Entry* ClusterStatus::find(PeerId id) const {
  auto it = table_.find(id);
  return it == table_.end() ? nullptr : &it->second;
}

Bytes ClusterStatus::encode() const {
  std::vector<const NodeSummary*> send;  // self first: a receiver that keeps only part still learns the sender
  send.reserve(std::min(table_.size(), kMaxEntries));
  if (auto self = table_.find(self_); self != table_.end()) send.push_back(&self->second.s);
  for (const auto& [id, e] : table_)
    if (id != self_ && send.size() < kMaxEntries) send.push_back(&e.s);
  Bytes out;
  out.reserve(1 + 4 + send.size() * kEntryBytes);
  ByteWriter w(out);
  w.put(kVersion);
  w.put(static_cast<std::uint32_t>(send.size()));
  for (const auto* s : send) put(w, *s);
  return out;
}

std::vector<NodeSummary> ClusterStatus::decode(std::span<const std::byte> payload) {
  ByteReader r(payload, "status");
  const auto version = r.get<std::uint8_t>();
  if (version != kVersion) throw DecodeError("status: version " + std::to_string(version));
  const auto n = r.get<std::uint32_t>();
  if (n > kMaxEntries) throw DecodeError("status: " + std::to_string(n) + " entries");
  if (r.remaining() != n * kEntryBytes) throw DecodeError("status: length does not match the entry count");
  std::vector<NodeSummary> out(n);
  for (auto& s : out) {
    s.id = r.get<PeerId>();
    s.incarnation = r.get<Incarnation>();
    s.seq = r.get<std::uint64_t>();
    s.state = r.get<std::uint8_t>();
    s.round = r.get<Round>();
    s.rounds = r.get<Round>();
    s.loss = r.get<float>();
    s.disagreement = r.get<float>();
    s.accuracy = r.get<float>();
    s.compression_ratio = r.get<float>();
    s.rounds_per_second = r.get<float>();
    s.neighbors = r.get<std::uint32_t>();
    s.bytes_sent = r.get<std::uint64_t>();
    s.states_sent = r.get<std::uint64_t>();
    s.states_received = r.get<std::uint64_t>();
    // Values that would print as garbage on /cluster are refused (NaN loss means "not known yet").
    if (s.state > kMaxNodeState || std::isinf(s.loss) || std::isinf(s.disagreement) || s.disagreement < 0 ||
        !std::isfinite(s.accuracy) || s.accuracy > 1 || !std::isfinite(s.compression_ratio) ||
        !std::isfinite(s.rounds_per_second))
      throw DecodeError("status: entry of node " + std::to_string(s.id) + " out of range");
  }
  r.expectEnd();
  return out;
}

}  // namespace gossip::daemon
