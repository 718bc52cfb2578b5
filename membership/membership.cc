#include "membership/membership.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/fnv1a.h"
#include "core/serial.h"

namespace gossip::peer {

namespace {

constexpr std::uint32_t kTag = serial::fourcc("GSWM");
constexpr std::uint8_t kVersion = Membership::kWireVersion;

enum Kind : std::uint8_t {
  kJoin = 1, kJoinReply = 2, kPing = 3, kPingReq = 4, kAck = 5, kLeave = 6, kGossip = 7, kRefuse = 8
};

// id, incarnation, instance, version, state, endpoint length: the smallest a Record can be on the wire.
constexpr std::size_t kMinRecordBytes = 4 + 8 + 8 + 8 + 1 + 2;

bool live(MemberState s) { return s == MemberState::Alive || s == MemberState::Suspect; }

void putString16(ByteWriter& w, const std::string& s) {
  w.put(static_cast<std::uint16_t>(s.size()));
  if (!s.empty()) std::memcpy(w.reserveTail(s.size()), s.data(), s.size());
}

std::string getString16(ByteReader& r, std::size_t cap) {
  const auto n = r.get<std::uint16_t>();
  if (n > cap) throw DecodeError("membership: endpoint of " + std::to_string(n) + " bytes (limit " +
                                 std::to_string(cap) + ")");
  const auto s = r.take(n);  // throws if truncated, before the string is built
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

void putRecord(ByteWriter& w, const MemberInfo& m) {
  w.put(m.id);
  w.put(m.incarnation);
  w.put(m.instance);
  w.put(m.version);
  w.put(static_cast<std::uint8_t>(m.state));
  putString16(w, m.endpoint);
}

MemberInfo getRecord(ByteReader& r) {
  MemberInfo m;
  m.id = r.get<PeerId>();
  m.incarnation = r.get<Incarnation>();
  m.instance = r.get<std::uint64_t>();
  m.version = r.get<std::uint64_t>();
  const auto state = r.get<std::uint8_t>();
  if (state > static_cast<std::uint8_t>(MemberState::Left))
    throw DecodeError("membership: unknown member state " + std::to_string(state));
  m.state = static_cast<MemberState>(state);
  m.endpoint = getString16(r, Membership::kMaxEndpoint);
  // The reserved id means "a seed not known yet" to SendFn, and a member without an address is unreachable.
  if (m.id == Membership::kUnknownPeer) throw DecodeError("membership: a record with the reserved id");
  if (m.endpoint.empty()) throw DecodeError("membership: a record without an endpoint");
  return m;
}

// Reads a record count and checks it against both its limit and the bytes that remain, so a hostile
// count cannot make us reserve memory the message could not fill.
std::size_t getRecordCount(ByteReader& r, std::size_t n, std::size_t cap, const char* what) {
  if (n > cap) throw DecodeError(std::string("membership: ") + what + " of " + std::to_string(n) + " records");
  if (n > r.remaining() / kMinRecordBytes)
    throw DecodeError(std::string("membership: ") + what + " of " + std::to_string(n) +
                      " records exceeds the bytes that remain");
  return n;
}

}  // namespace

struct Membership::Message {
  std::uint64_t fingerprint = 0;    // decoded messages only; encode sends ours
  MemberInfo sender;
  std::uint32_t seq = 0;
  PeerId target = 0;
  Incarnation target_incarnation = 0;
  std::string target_endpoint;
  std::string identity;             // Join (decoded messages only; encode sends ours)
  std::uint8_t reason = 0;          // Refuse
  std::string text;                 // Refuse
  std::vector<MemberInfo> list;     // JoinReply
  std::vector<MemberInfo> updates;  // piggybacked (decoded messages only; encode takes them from the queue)
};

Membership::Membership(MemberInfo self, std::vector<std::string> seeds, MembershipOptions options, SendFn send,
                       std::uint64_t rng_seed)
    : self_id_(self.id), opt_(options), fingerprint_(fnv1a64(opt_.identity)), send_(std::move(send)), rng_(rng_seed) {
  GOSSIP_CHECK(self.id != kUnknownPeer, "the id ", self.id, " is reserved");
  GOSSIP_CHECK(!self.endpoint.empty() && self.endpoint.size() <= kMaxEndpoint, "endpoint of ",
               self.endpoint.size(), " bytes (1 to ", kMaxEndpoint, ")");
  GOSSIP_CHECK(opt_.probe_interval.count() > 0 && opt_.probe_timeout <= opt_.probe_interval);
  GOSSIP_CHECK(opt_.max_piggyback <= kMaxPiggyback);
  GOSSIP_CHECK(opt_.identity.size() <= kMaxIdentity, "cluster identity of ", opt_.identity.size(), " bytes (limit ",
               kMaxIdentity, ")");
  self.state = MemberState::Alive;
  // Our own endpoint among the seeds (a shared seed list) would only make us wait for ourselves.
  for (auto& s : seeds)
    if (s != self.endpoint) seeds_.push_back(std::move(s));
  members_[self_id_].info = std::move(self);
  if (seeds_.empty()) got_list_ = joined_ = true;  // the first node
}

std::size_t Membership::liveCount() const {
  return static_cast<std::size_t>(
      std::count_if(members_.begin(), members_.end(), [](const auto& kv) { return live(kv.second.info.state); }));
}

bool Membership::isLive(PeerId id) const {
  const auto it = members_.find(id);
  return it != members_.end() && live(it->second.info.state);
}

std::chrono::milliseconds Membership::suspicionTimeout() const {
  const double scale = std::max(1.0, std::log10(static_cast<double>(std::max<std::size_t>(1, liveCount()))));
  return std::chrono::milliseconds(static_cast<std::int64_t>(
      std::llround(opt_.suspicion_mult * scale * static_cast<double>(opt_.probe_interval.count()))));
}

void Membership::enqueue(PeerId id) {
  if (id == self_id_) return;  // our own record rides in the header of every message we send
  const auto n = static_cast<double>(liveCount());
  const auto times = std::max(1u, opt_.retransmit_mult * static_cast<unsigned>(std::ceil(std::log10(n + 1))));
  queue_[id] = Broadcast{next_order_++, times};
}

Bytes Membership::encode(PeerId to, std::uint8_t kind, const Message& body, std::span<const PeerId> forced) {
  Bytes out;
  ByteWriter w(out);
  serial::putTag(w, kTag);
  w.put(kVersion);
  w.put(kind);
  w.put(fingerprint_);
  putRecord(w, members_.at(self_id_).info);
  switch (kind) {
    case kJoinReply: {
      const std::size_t n = std::min(members_.size(), kMaxMembers);
      w.put(static_cast<std::uint32_t>(n));
      std::size_t i = 0;
      for (const auto& [id, e] : members_) {
        if (i++ == n) break;
        putRecord(w, e.info);
      }
      break;
    }
    case kPing:
    case kAck:
      w.put(body.seq);
      w.put(body.target);
      break;
    case kPingReq:
      w.put(body.seq);
      w.put(body.target);
      w.put(body.target_incarnation);
      putString16(w, body.target_endpoint);
      break;
    case kJoin:
      putString16(w, opt_.identity);
      break;
    case kRefuse:
      w.put(body.reason);
      putString16(w, body.text);
      break;
    default:
      break;
  }
  // Join, JoinReply and Refuse carry no gossip: a Join may go to a dead seed or another cluster, a reply
  // already holds everything, and a Refuse goes to a node of another cluster.
  std::vector<PeerId> pick(forced.begin(), forced.end());
  if (kind != kJoin && kind != kJoinReply && kind != kRefuse) {
    std::vector<std::pair<std::uint64_t, PeerId>> newest;
    newest.reserve(queue_.size());
    for (const auto& [id, b] : queue_)
      if (std::find(forced.begin(), forced.end(), id) == forced.end()) newest.emplace_back(b.order, id);
    std::sort(newest.begin(), newest.end(), std::greater<>());
    const std::size_t cap = std::max(opt_.max_piggyback, forced.size());
    for (const auto& [order, id] : newest) {
      if (pick.size() >= cap) break;
      pick.push_back(id);
      auto q = queue_.find(id);
      if (--q->second.left == 0) queue_.erase(q);
    }
  }
  if (kind != kJoin && kind != kJoinReply && kind != kRefuse && pick.size() < std::max(opt_.max_piggyback, forced.size()))
    if (const auto id = nextAntiEntropy(pick, to)) pick.push_back(*id);
  w.put(static_cast<std::uint16_t>(pick.size()));
  for (PeerId id : pick) putRecord(w, members_.at(id).info);
  return out;
}

// The next Alive member after the last one sent this way (wrapping around), other than us, the receiver
// (its own record would waste the slot) and the picked.
std::optional<PeerId> Membership::nextAntiEntropy(const std::vector<PeerId>& picked, PeerId to) {
  const auto eligible = [&](const auto& kv) {
    return kv.first != self_id_ && kv.first != to && kv.second.info.state == MemberState::Alive &&
           std::find(picked.begin(), picked.end(), kv.first) == picked.end();
  };
  auto it = std::find_if(members_.upper_bound(anti_entropy_after_), members_.end(), eligible);
  if (it == members_.end()) it = std::find_if(members_.begin(), members_.end(), eligible);
  if (it == members_.end()) return std::nullopt;
  anti_entropy_after_ = it->first;
  return it->first;
}

void Membership::sendMsg(PeerId to, const std::string& endpoint, std::uint8_t kind, const Message& body,
                         std::span<const PeerId> forced) {
  Bytes bytes = encode(to, kind, body, forced);
  ++stats_.messages_sent;
  stats_.bytes_sent += bytes.size();
  send_(to, endpoint, std::move(bytes));
}

void Membership::sendPing(PeerId target, const std::string& endpoint, std::uint32_t seq,
                          std::span<const PeerId> forced) {
  Message m;
  m.seq = seq;
  m.target = target;
  sendMsg(target, endpoint, kPing, m, forced);
}

Membership::Message Membership::decode(PeerId from, std::span<const std::byte> payload, std::uint8_t& kind) {
  ByteReader r(payload, "membership message");
  serial::expectTag(r, kTag, "a membership message");
  const auto version = r.get<std::uint8_t>();
  if (version != kVersion) throw DecodeError("membership: unsupported version " + std::to_string(version));
  kind = r.get<std::uint8_t>();
  if (kind < kJoin || kind > kRefuse) throw DecodeError("membership: unknown kind " + std::to_string(kind));
  Message m;
  m.fingerprint = r.get<std::uint64_t>();
  m.sender = getRecord(r);
  if (m.sender.id != from)
    throw DecodeError("membership: sender record names " + std::to_string(m.sender.id) + ", frame came from " +
                      std::to_string(from));
  // A node speaks of itself only as Alive, or as Left once it left (a Leave, and the Acks it still sends
  // until the daemon stops); Suspect and Dead are others' opinions.
  if (kind == kLeave ? m.sender.state != MemberState::Left
                     : m.sender.state != MemberState::Alive && m.sender.state != MemberState::Left)
    throw DecodeError("membership: sender record in a wrong state");
  switch (kind) {
    case kJoinReply: {
      const std::size_t n = getRecordCount(r, r.get<std::uint32_t>(), kMaxMembers, "member list");
      m.list.reserve(n);
      for (std::size_t i = 0; i < n; ++i) m.list.push_back(getRecord(r));
      break;
    }
    case kPing:
    case kAck:
      m.seq = r.get<std::uint32_t>();
      m.target = r.get<PeerId>();
      break;
    case kPingReq:
      m.seq = r.get<std::uint32_t>();
      m.target = r.get<PeerId>();
      m.target_incarnation = r.get<Incarnation>();
      m.target_endpoint = getString16(r, kMaxEndpoint);
      break;
    case kJoin:
      m.identity = getString16(r, kMaxIdentity);
      break;
    case kRefuse:
      m.reason = r.get<std::uint8_t>();
      if (m.reason != static_cast<std::uint8_t>(Refusal::Reason::Identity) &&
          m.reason != static_cast<std::uint8_t>(Refusal::Reason::DuplicateId))
        throw DecodeError("membership: unknown refusal reason " + std::to_string(m.reason));
      m.text = getString16(r, kMaxIdentity);
      break;
    default:
      break;
  }
  const std::size_t n = getRecordCount(r, r.get<std::uint16_t>(), kMaxPiggyback, "piggyback");
  m.updates.reserve(n);
  for (std::size_t i = 0; i < n; ++i) m.updates.push_back(getRecord(r));
  r.expectEnd();
  return m;
}

// Merges one record by the precedence rules (header comment). Returns whether our table changed; sets
// `refuted` when the record called us Suspect, so the caller answers its sender with our current record.
bool Membership::apply(const MemberInfo& rec, MsClock::time_point now, bool& refuted) {
  if (rec.id == self_id_) {
    MemberInfo& me = members_.at(self_id_).info;
    if (rec.incarnation < me.incarnation) return false;  // about a previous life of ours
    if (rec.incarnation > me.incarnation) {
      // A later life of this id exists: we are the stale one, the same as being declared dead.
      declared_dead_ = true;
      return false;
    }
    switch (rec.state) {
      case MemberState::Dead:
        declared_dead_ = true;  // never refuted: the daemon restarts us as a new incarnation
        return false;
      case MemberState::Suspect:
        if (left_ || declared_dead_) return false;
        refuted = true;
        if (rec.version < me.version) return false;  // already refuted; the sender still needs to hear it
        me.version = rec.version + 1;
        ++stats_.suspicions_refuted;
        return true;
      case MemberState::Alive:
        me.version = std::max(me.version, rec.version);
        return false;
      case MemberState::Left:
        return false;  // only we decide that
    }
    return false;
  }

  auto it = members_.find(rec.id);
  if (it == members_.end() || rec.incarnation > it->second.info.incarnation) {
    // Unknown, or a restarted node: a new member that replaces everything about the old one.
    if (it != members_.end() && live(it->second.info.state))
      events_.push_back({MembershipEvent::Kind::Died, rec.id, it->second.info.incarnation});
    Entry& e = members_[rec.id];
    e = Entry{};
    e.info = rec;
    e.suspect_since = now;
    if (live(rec.state)) events_.push_back({MembershipEvent::Kind::Joined, rec.id, rec.incarnation});
    if (rec.state == MemberState::Suspect)
      events_.push_back({MembershipEvent::Kind::Suspected, rec.id, rec.incarnation});
    enqueue(rec.id);
    return true;
  }
  MemberInfo& cur = it->second.info;
  if (rec.incarnation < cur.incarnation) return false;
  if (!live(cur.state)) return false;  // Dead and Left are final
  switch (rec.state) {
    case MemberState::Alive:
      if (rec.version <= cur.version) return false;
      if (cur.state == MemberState::Suspect)
        events_.push_back({MembershipEvent::Kind::Refuted, rec.id, rec.incarnation});
      cur.version = rec.version;
      cur.state = MemberState::Alive;
      break;
    case MemberState::Suspect:
      if (cur.state == MemberState::Alive ? rec.version < cur.version : rec.version <= cur.version) return false;
      if (cur.state == MemberState::Alive) {  // a suspicion already running keeps its timer
        it->second.suspect_since = now;
        it->second.accused_by_us = it->second.checked = false;
        events_.push_back({MembershipEvent::Kind::Suspected, rec.id, rec.incarnation});
      }
      cur.version = rec.version;
      cur.state = MemberState::Suspect;
      break;
    case MemberState::Dead:
      if (it->second.heard && now - *it->second.heard < suspicionTimeout()) {
        // It spoke to us while its accuser's suspicion ran: hold it as our own suspicion (header comment).
        if (cur.state == MemberState::Suspect) return false;  // one already runs: its timer decides
        cur.state = MemberState::Suspect;
        cur.version = std::max(cur.version, rec.version);
        it->second.suspect_since = now;
        it->second.accused_by_us = it->second.checked = false;
        ++stats_.deaths_doubted;
        events_.push_back({MembershipEvent::Kind::Suspected, rec.id, rec.incarnation});
        break;
      }
      cur.state = MemberState::Dead;
      events_.push_back({MembershipEvent::Kind::Died, rec.id, rec.incarnation});
      break;
    case MemberState::Left:
      cur.state = MemberState::Left;
      events_.push_back({MembershipEvent::Kind::Left, rec.id, rec.incarnation});
      break;
  }
  enqueue(rec.id);
  return true;
}

void Membership::receive(PeerId from, std::span<const std::byte> payload, MsClock::time_point now) {
  std::uint8_t kind = 0;
  const Message m = decode(from, payload, kind);  // the only step that throws; nothing changed before it

  // Another cluster's node, or a second node with a live member's id: nothing of it enters our table
  // (header comment, "Cluster identity" and "Owned ids").
  if (kind == kJoin) {
    if (auto refusal = refusalOf(from, m)) {
      Message answer;
      answer.reason = static_cast<std::uint8_t>(refusal->reason);
      answer.text = refusal->reason == Refusal::Reason::Identity ? opt_.identity : refusal->detail;
      if (refusals_.size() < 64) refusals_.push_back(std::move(*refusal));
      if (!declared_dead_) sendMsg(from, m.sender.endpoint, kRefuse, answer);
      return;
    }
  }
  // Another cluster's message (header comment, "Cluster identity"): dropped whole, answered with our
  // identity so that its sender can say which keys differ.
  if (kind != kJoin && kind != kRefuse && m.fingerprint != fingerprint_) {
    ++stats_.foreign_messages;
    if (refusals_.size() < 64) refusals_.push_back(Refusal{from, m.sender.endpoint, Refusal::Reason::Foreign, {}});
    Message answer;
    answer.reason = static_cast<std::uint8_t>(Refusal::Reason::Identity);
    answer.text = opt_.identity;
    if (!declared_dead_) sendMsg(from, m.sender.endpoint, kRefuse, answer);
    return;
  }
  if (kind == kRefuse) {
    if (!refused_by_ && (!got_list_ || isolated()))
      refused_by_ = Refusal{from, m.sender.endpoint, static_cast<Refusal::Reason>(m.reason), m.text};
    return;
  }
  if (kind == kJoinReply) got_list_ = true;
  if (kind != kJoin) joined_ = true;
  // A member we hold Dead in the life it speaks for has not heard of the verdict yet (the losing side of a
  // healed partition, before it rejoins): what it says of third parties dates from before the heal. Its
  // suspicions and deaths are not taken (its news of members alive still is). Taken, they spread: a node of
  // the winning side that had rejoined took a loser's verdict on a winner whose link to it was not back yet,
  // passed it on, and that winner, outnumbered by the accuser's table, rejoined too (15 winners in 40 seeded
  // 4/4 splits healed link by link within 0.3 s, none since: tests/unit/daemon/test_node_inprocess.cc).
  const auto senderIt = members_.find(from);
  const bool fromDead = from != self_id_ && senderIt != members_.end() &&
                        senderIt->second.info.incarnation == m.sender.incarnation &&
                        senderIt->second.info.state == MemberState::Dead;
  const auto staleVerdict = [&](const MemberInfo& rec) {
    return fromDead && rec.id != self_id_ && rec.id != from &&
           (rec.state == MemberState::Dead || rec.state == MemberState::Suspect);
  };
  bool refuted = false;
  apply(m.sender, now, refuted);
  if (const auto sit = members_.find(from); from != self_id_ && sit != members_.end() &&
                                            sit->second.info.incarnation == m.sender.incarnation)
    sit->second.heard = now;

  // A Dead verdict on this life of ours is contested (header comment): taken only with the accuser's
  // table in hand and its side the larger.
  const MemberInfo& me = members_.at(self_id_).info;
  const auto deadOnMe = [&](const std::vector<MemberInfo>& records) {
    return std::any_of(records.begin(), records.end(), [&](const MemberInfo& r) {
      return r.id == self_id_ && r.incarnation == me.incarnation && r.state == MemberState::Dead;
    });
  };
  bool contested = false;
  if (from != self_id_ && !left_ && !declared_dead_) {
    if (kind == kJoinReply && deadOnMe(m.list)) {
      if (accuserWins(m.sender, m.list)) {
        rejoin_via_ = m.sender.endpoint;  // the list's own Dead record on us sets declared_dead_ below
      } else {
        contested = true;
        ++stats_.verdicts_rejected;
        returnVerdict(from, m.sender.incarnation, now);
      }
    } else if (deadOnMe(m.updates)) {
      contested = true;
      contest(from, m.sender.endpoint, now);
    }
  }
  // What a contested message says of us, and the deaths it reports of members we hold live, wait for the
  // comparison; a JoinReply we outnumber is about a side that rejoins, so none of it applies.
  const auto deferred = [&](const MemberInfo& rec) {
    return contested && (kind == kJoinReply || (rec.state == MemberState::Dead && (rec.id == self_id_ || isLive(rec.id))));
  };
  for (const auto& rec : m.list)
    if (!deferred(rec) && !staleVerdict(rec)) apply(rec, now, refuted);
  // The member that answered our Join holds these live: as fresh evidence as hearing them ourselves, for
  // the second-hand deaths in apply(). Without it, a node back from a healed partition took the stale
  // "dead" verdicts that the losing side's untold members still gossiped about the winners, and passed
  // them on: in netns_split 7 of 8 nodes rejoined instead of one island (docs/netns.md).
  if (kind == kJoinReply && !contested)
    for (const auto& rec : m.list) {
      const auto it = members_.find(rec.id);
      if (rec.id != self_id_ && live(rec.state) && it != members_.end() &&
          it->second.info.incarnation == rec.incarnation && live(it->second.info.state))
        it->second.heard = now;
    }
  // Rumours older than what we know are answered with our record: a node still spreading a suspicion that
  // was refuted (or life of a member that died) is corrected at once, instead of seeding new suspicion
  // timers after the refutation's own retransmissions ran out.
  std::vector<PeerId> forced;
  for (const auto& rec : m.updates) {
    const auto it = members_.find(rec.id);
    if (rec.id != self_id_ && it != members_.end() && live(rec.state) && forced.size() < opt_.max_piggyback) {
      const MemberInfo& cur = it->second.info;
      if (rec.incarnation < cur.incarnation ||
          (rec.incarnation == cur.incarnation &&
           (!live(cur.state) || (rec.state == MemberState::Suspect && cur.version > rec.version))))
        forced.push_back(rec.id);
    }
    if (!deferred(rec) && !staleVerdict(rec)) apply(rec, now, refuted);
  }

  if (from == self_id_ || declared_dead_) return;  // a dead node stays silent until the daemon restarts it
  if (left_) {
    // Until the daemon stops, answer pings with our Left record: a prober that has not heard of the leave
    // yet learns it from the Ack instead of suspecting us.
    if (kind == kPing && m.target == self_id_) {
      Message ack;
      ack.seq = m.seq;
      ack.target = self_id_;
      sendMsg(from, m.sender.endpoint, kAck, ack);
    }
    return;
  }

  // The sender's own record did not clear our verdict on it: tell it, so it refutes or learns it is dead.
  const auto sit = members_.find(from);
  if (sit != members_.end() && sit->second.info.incarnation == m.sender.incarnation &&
      (sit->second.info.state == MemberState::Suspect || sit->second.info.state == MemberState::Dead) &&
      std::find(forced.begin(), forced.end(), from) == forced.end())
    forced.insert(forced.begin(), from);
  const std::string& from_endpoint = m.sender.endpoint;

  bool answered = false;
  switch (kind) {
    case kJoin:
      sendMsg(from, from_endpoint, kJoinReply, Message{});  // holds our verdict on it too
      answered = true;
      break;
    case kPing:
      if (m.target == self_id_) {
        Message ack;
        ack.seq = m.seq;
        ack.target = self_id_;
        sendMsg(from, from_endpoint, kAck, ack, forced);
        answered = true;
      }
      break;
    case kPingReq: {
      const auto t = members_.find(m.target);
      if (m.target == self_id_ || m.target == kUnknownPeer || (t == members_.end() && m.target_endpoint.empty()))
        break;  // nowhere to ping
      const std::uint32_t seq = next_seq_++;
      relays_[seq] = Relay{from, m.seq, m.target, now + opt_.probe_interval};
      sendPing(m.target, t != members_.end() ? t->second.info.endpoint : m.target_endpoint, seq);
      break;
    }
    case kAck: {
      const auto r = relays_.find(m.seq);
      if (r != relays_.end() && r->second.target == m.target && from == m.target) {
        Message fwd;
        fwd.seq = r->second.requester_seq;
        fwd.target = m.target;
        const auto req = members_.find(r->second.requester);
        if (req != members_.end()) sendMsg(req->first, req->second.info.endpoint, kAck, fwd);
        relays_.erase(r);
        break;
      }
      std::erase_if(probes_, [&](const Probe& p) { return p.seq == m.seq && p.target == m.target; });
      break;
    }
    default:
      break;
  }
  if (!answered && kind != kLeave && (refuted || !forced.empty()))
    sendMsg(from, from_endpoint, kGossip, Message{}, forced);
}

// Would the side of `accuser` (the members its table holds live, itself included) outnumber our camp (the
// members we hold live and it does not, ourselves included)? Ties go to the side with the lowest id. After
// a clean partition the sets are the two sides, and the two ends of a contest reach opposite answers.
bool Membership::accuserWins(const MemberInfo& accuser, const std::vector<MemberInfo>& table) const {
  std::vector<std::pair<PeerId, Incarnation>> side{{accuser.id, accuser.incarnation}};
  for (const auto& r : table)
    if (live(r.state) && r.id != self_id_ && r.id != accuser.id) side.emplace_back(r.id, r.incarnation);
  std::sort(side.begin(), side.end());
  std::vector<PeerId> camp;
  for (const auto& [id, e] : members_)
    if (live(e.info.state) && !std::binary_search(side.begin(), side.end(), std::make_pair(id, e.info.incarnation)))
      camp.push_back(id);  // members_ is sorted by id, and holds us: camp is never empty
  if (side.size() != camp.size()) return side.size() > camp.size();
  return side.front().first < camp.front();
}

std::optional<Refusal> Membership::refusalOf(PeerId from, const Message& join) const {
  if (join.identity != opt_.identity) return Refusal{from, join.sender.endpoint, Refusal::Reason::Identity, join.identity};
  const auto it = members_.find(from);
  if (it == members_.end() || join.sender.instance == 0) return std::nullopt;
  const MemberInfo& held = it->second.info;
  const bool live_here = from == self_id_ ? !left_ && !declared_dead_ : live(held.state);
  if (live_here && held.instance != 0 && held.instance != join.sender.instance)
    return Refusal{from, join.sender.endpoint, Refusal::Reason::DuplicateId, held.endpoint};
  return std::nullopt;
}

// We outnumber an accuser that holds us dead, so its side is the one to rejoin; after a partition it holds
// our side dead already, and its own contest makes it do so. A one-sided verdict (the accuser's timer ran
// while only its links to us were slow, or it took our death second-hand) had nothing to end it: the
// accuser kept its tombstone, we kept it live, and the two views stayed apart for good (a swarm CI run:
// three nodes held four dead for minutes, and every ring round hit its timeout). Holding the accuser dead
// ourselves makes the verdicts symmetric: our answers and recontact pings tell it, it contests, our table
// outnumbers its side, and it rejoins as a new life.
//
// Not while our view may be stale from a pause: members that died while we were stopped are still live
// here until we have probed them and our restarted timers ran out, so our camp can be counted too large
// (a tie of {us + three dead} against four live accusers). Refusing then only waits for our own timers,
// after which we lose the next contest and rejoin; returning the verdict instead made the healthy
// accusers rejoin through us, one after the other.
void Membership::returnVerdict(PeerId accuser, Incarnation incarnation, MsClock::time_point now) {
  const auto stale = suspicionTimeout() + static_cast<std::int64_t>(liveCount()) * opt_.probe_interval;
  if ((last_tick_ && now - *last_tick_ > 2 * opt_.probe_interval) || (resumed_at_ && now - *resumed_at_ < stale)) return;
  Entry& e = members_.at(accuser);  // receive() applied its record first
  if (e.info.incarnation != incarnation || !live(e.info.state)) return;
  e.info.state = MemberState::Dead;
  ++stats_.verdicts_returned;
  events_.push_back({MembershipEvent::Kind::Died, accuser, incarnation});
  enqueue(accuser);
}

// Asks the accuser for its table (a Join: any member answers it with a JoinReply holding its verdicts).
void Membership::contest(PeerId accuser, const std::string& endpoint, MsClock::time_point now) {
  Entry& e = members_.at(accuser);  // receive() applied its record first
  if (e.next_challenge && now < *e.next_challenge) return;
  e.next_challenge = now + opt_.probe_interval;
  ++stats_.verdicts_contested;
  sendMsg(accuser, endpoint, kJoin, Message{});
}

void Membership::suspect(PeerId id, MsClock::time_point now) {
  Entry& e = members_.at(id);
  e.info.state = MemberState::Suspect;
  e.suspect_since = now;
  e.accused_by_us = true;
  e.next_notice = now;
  events_.push_back({MembershipEvent::Kind::Suspected, id, e.info.incarnation});
  ++stats_.suspicions_raised;
  enqueue(id);
  noticeSuspects(now);
}

void Membership::noticeSuspects(MsClock::time_point now) {
  for (auto& [id, e] : members_) {
    if (!e.accused_by_us || e.info.state != MemberState::Suspect || now < e.next_notice) continue;
    const PeerId forced[] = {id};
    sendMsg(id, e.info.endpoint, kGossip, Message{}, forced);
    e.next_notice = now + opt_.probe_interval;
  }
}

void Membership::startProbe(PeerId id, MsClock::time_point now) {
  const Entry& e = members_.at(id);
  const std::uint32_t seq = next_seq_++;
  probes_.push_back(Probe{id, e.info.incarnation, seq, now});
  ++stats_.probes_sent;
  // A suspect is told so in the Ping itself, so its Ack can carry the refutation.
  const PeerId forced[] = {id};
  sendPing(id, e.info.endpoint, seq,
           e.info.state == MemberState::Suspect ? std::span<const PeerId>(forced) : std::span<const PeerId>());
}

std::vector<PeerId> Membership::randomLive(std::size_t k, PeerId exclude, bool alive_only) {
  std::vector<PeerId> c;
  for (const auto& [id, e] : members_)
    if (id != self_id_ && id != exclude &&
        (alive_only ? e.info.state == MemberState::Alive : live(e.info.state)))
      c.push_back(id);
  k = std::min(k, c.size());
  for (std::size_t i = 0; i < k; ++i) std::swap(c[i], c[i + rng_.below(c.size() - i)]);
  c.resize(k);
  return c;
}

void Membership::handleProbes(MsClock::time_point now) {
  std::vector<PeerId> to_suspect;
  std::erase_if(probes_, [&](Probe& p) {
    const auto it = members_.find(p.target);
    if (it == members_.end() || it->second.info.incarnation != p.incarnation || !live(it->second.info.state))
      return true;  // gone or replaced meanwhile: nothing left to probe
    if (now >= p.start + opt_.probe_interval) {
      if (it->second.info.state == MemberState::Alive) to_suspect.push_back(p.target);
      return true;
    }
    if (!p.indirect_sent && now >= p.start + opt_.probe_timeout) {
      p.indirect_sent = true;
      Message req;
      req.seq = p.seq;
      req.target = p.target;
      req.target_incarnation = p.incarnation;
      req.target_endpoint = it->second.info.endpoint;
      for (PeerId h : randomLive(opt_.indirect_probes, p.target, true)) {
        ++stats_.indirect_probes_sent;
        sendMsg(h, members_.at(h).info.endpoint, kPingReq, req);
      }
    }
    return false;
  });
  for (PeerId id : to_suspect) suspect(id, now);
}

void Membership::nextProbe(MsClock::time_point now) {
  for (std::size_t tries = 0; tries < 2 * members_.size() + 2; ++tries) {
    if (probe_pos_ >= probe_order_.size()) {
      // A new pass: every live member once, in a fresh random order.
      probe_order_.clear();
      for (const auto& [id, e] : members_)
        if (id != self_id_ && live(e.info.state)) probe_order_.push_back(id);
      for (std::size_t i = probe_order_.size(); i > 1; --i)
        std::swap(probe_order_[i - 1], probe_order_[rng_.below(i)]);
      probe_pos_ = 0;
      if (probe_order_.empty()) return;
    }
    const PeerId id = probe_order_[probe_pos_++];
    if (!isLive(id) || std::any_of(probes_.begin(), probes_.end(), [&](const Probe& p) { return p.target == id; }))
      continue;
    startProbe(id, now);
    return;
  }
}

void Membership::tryJoin(MsClock::time_point now) {
  if (got_list_ || seeds_.empty() || (next_join_ && now < *next_join_)) return;
  const std::string& seed = seeds_[join_index_++ % seeds_.size()];
  PeerId to = kUnknownPeer;
  for (const auto& [id, e] : members_)
    if (id != self_id_ && e.info.endpoint == seed) to = id;
  ++stats_.join_attempts;
  sendMsg(to, seed, kJoin, Message{});
  join_backoff_ = join_backoff_.count() == 0 ? opt_.join_retry_initial
                                              : std::min(2 * join_backoff_, opt_.join_retry_max);
  next_join_ = now + join_backoff_;
}

void Membership::knockWhenAlone(MsClock::time_point now) {
  std::vector<std::pair<PeerId, std::string>> targets;
  if (joined_ && liveCount() <= 1)
    for (const auto& [id, e] : members_)
      if (id != self_id_ && e.info.state == MemberState::Dead) targets.emplace_back(id, e.info.endpoint);
  if (targets.empty()) {
    next_knock_.reset();
    return;
  }
  for (const auto& seed : seeds_) targets.emplace_back(kUnknownPeer, seed);
  if (!next_knock_) next_knock_ = now;
  if (now < *next_knock_) return;
  const auto& [to, endpoint] = targets[knock_index_++ % targets.size()];
  ++stats_.join_attempts;
  sendMsg(to, endpoint, kJoin, Message{});
  next_knock_ = now + opt_.probe_interval;
}

void Membership::recontactDead(MsClock::time_point now) {
  if (opt_.recontact_interval.count() == 0 || (next_recontact_ && now < *next_recontact_)) return;
  next_recontact_ = now + opt_.recontact_interval;
  std::vector<PeerId> dead;
  for (const auto& [id, e] : members_)
    if (id != self_id_ && e.info.state == MemberState::Dead && !e.info.endpoint.empty()) dead.push_back(id);
  if (dead.empty()) return;
  // A truly crashed member costs one small message per interval; a partitioned one hears that it was
  // declared dead (Dead is final here) and comes back as a new incarnation through its seeds.
  const PeerId target = dead[rng_.below(dead.size())];
  const PeerId verdict[] = {target};
  sendPing(target, members_.at(target).info.endpoint, next_seq_++, verdict);
}

void Membership::tick(MsClock::time_point now) {
  const auto last = last_tick_;
  last_tick_ = now;
  if (left_ || declared_dead_) return;
  if (last && now - *last > 2 * opt_.probe_interval) {
    // We were not running: unanswered probes say nothing about their targets, and suspicions ran out
    // while we could not hear refutations. Start both afresh.
    probes_.clear();
    relays_.clear();
    resumed_at_ = now;
    for (auto& [id, e] : members_)
      if (e.info.state == MemberState::Suspect) e.suspect_since = now;
    next_probe_ = now;
  }
  tryJoin(now);
  knockWhenAlone(now);

  const auto timeout = suspicionTimeout();
  for (auto& [id, e] : members_) {
    if (id == self_id_ || e.info.state != MemberState::Suspect) continue;
    if (!e.checked && !e.accused_by_us && now - e.suspect_since >= timeout / 2) {
      e.checked = true;
      if (std::none_of(probes_.begin(), probes_.end(), [&](const Probe& p) { return p.target == id; }))
        startProbe(id, now);
    }
    if (now - e.suspect_since < timeout) continue;
    e.info.state = MemberState::Dead;
    ++stats_.deaths_declared;
    events_.push_back({MembershipEvent::Kind::Died, id, e.info.incarnation});
    enqueue(id);
  }

  noticeSuspects(now);
  handleProbes(now);  // before the next probe starts, so the previous one's deadline is seen first
  if (!next_probe_ || now >= *next_probe_) {
    nextProbe(now);
    next_probe_ = next_probe_ && *next_probe_ + opt_.probe_interval > now ? *next_probe_ + opt_.probe_interval
                                                                            : now + opt_.probe_interval;
  }
  recontactDead(now);
  std::erase_if(relays_, [&](const auto& kv) { return now >= kv.second.expires; });
}

void Membership::leave(MsClock::time_point now) {
  (void)now;
  if (left_) return;
  left_ = true;
  members_.at(self_id_).info.state = MemberState::Left;
  probes_.clear();
  relays_.clear();
  for (PeerId id : randomLive(opt_.indirect_probes + 1, self_id_, false))
    sendMsg(id, members_.at(id).info.endpoint, kLeave, Message{});
}

void Membership::hintUnreachable(PeerId id, MsClock::time_point now) {
  if (left_ || declared_dead_ || id == self_id_ || !isLive(id)) return;
  if (std::any_of(probes_.begin(), probes_.end(), [&](const Probe& p) { return p.target == id; })) return;
  startProbe(id, now);
}

bool Membership::isolated() const {
  if (!joined_ || liveCount() > 1) return false;
  return std::any_of(members_.begin(), members_.end(), [](const auto& kv) { return kv.second.info.state == MemberState::Dead; });
}

std::vector<MemberInfo> Membership::members() const {
  std::vector<MemberInfo> out;
  out.reserve(members_.size());
  for (const auto& [id, e] : members_) out.push_back(e.info);
  return out;
}

std::vector<engine::Member> Membership::alive() const {
  std::vector<engine::Member> out;
  for (const auto& [id, e] : members_)
    if (live(e.info.state)) out.push_back({id, e.info.incarnation});
  return out;
}

std::vector<MembershipEvent> Membership::takeEvents() { return std::exchange(events_, {}); }

std::vector<Refusal> Membership::takeRefusals() { return std::exchange(refusals_, {}); }

}  // namespace gossip::peer
