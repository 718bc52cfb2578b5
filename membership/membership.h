#pragma once
// Membership: SWIM-style membership and failure detection (DESIGN.md §5), as pure logic. It owns no socket,
// no thread and reads no clock: the daemon passes the time to tick()/receive(), carries the bytes it is
// given to SendFn inside its own frames (Membership frames, whose authenticated header names the sender)
// and maps endpoints to connections. That keeps it deterministic and testable over a simulated network.
//
// Members. A member is (id, incarnation): the incarnation is the node's life, bumped by the daemon on every
// restart, so a higher incarnation of an id is a new member that replaces the old one. Within one
// incarnation, `version` is SWIM's "incarnation number": only its owner bumps it, to refute a suspicion.
// Precedence for the same (id, incarnation): Alive(v) beats Suspect(v') iff v > v'; Suspect(v) beats
// Alive(v') iff v >= v'; Dead beats both at any version; Dead and Left are final. Dead and Left members are
// kept as tombstones so old gossip cannot resurrect them, and are never probed.
//
// Protocol
//  - Join: until a JoinReply arrives, send Join to the seeds round-robin, waiting join_retry_initial,
//    doubling up to join_retry_max between attempts. Any member answers a Join with its whole table
//    (tombstones included). joined() is true once a JoinReply or any message from a member arrived; Join
//    retries go on until a full list came, since piggybacked gossip only carries recent changes.
//  - Probing: every probe_interval, ping the next member of a list of Alive+Suspect members that is
//    shuffled on every pass. No ack within probe_timeout: PingReq to `indirect_probes` random Alive members,
//    who ping the target and forward its ack. No ack by the end of the interval: the target becomes Suspect
//    and, besides the gossip, is told so directly, again every probe_interval while it stays Suspect: it
//    must refute before the timeout, and waiting for some random prober to bring it the news can take long
//    (no prober picks a given node in an interval with probability ~1/e).
//  - Suspicion timeout = suspicion_mult * max(1, log10(n)) * probe_interval with n the Alive+Suspect
//    members including self (memberlist's rule: the time gossip needs to reach everyone grows with log n).
//    Every node that holds a suspicion runs its own timer; on expiry it declares the member Dead. Halfway
//    through, a node that heard the suspicion only by gossip and has not seen it refuted probes the suspect
//    itself (the Ping carries the suspicion, the Ack the refutation): a refutation's gossip can run out of
//    retransmissions before it reaches every holder, and at 10% message loss that alone caused false deaths
//    in the simulated tests. It costs one probe per holder still unaware, only for unrefuted suspicions.
//  - Refuting: a node that hears it is Suspect bumps its version and sends Alive(version) back to whoever
//    told it; every message it sends carries its own record, which also refutes. A node that hears it is
//    Dead (its id and current incarnation) never refutes: declaredDead() turns true and the daemon restarts
//    it as incarnation+1. A message from a member we hold as Suspect/Dead is answered with that record, so a
//    node back from a pause learns its fate even if nobody gossips to it.
//  - Contested verdicts (partition healing, below): a Dead verdict on us is taken only from a JoinReply,
//    i.e. with the accuser's whole table in hand. Heard in gossip, it makes us send the accuser a Join (at
//    most one per probe_interval) and is not applied. With the table, we compare the accuser's side (the
//    members it holds live) with our camp (the members we hold live and it does not, ourselves included):
//    we accept death when its side is larger, or as large with the smaller lowest id. After a partition
//    both sides hold the other dead, and both compute the same comparison from opposite ends, so exactly
//    one side rejoins; a node back from a pause (camp: itself) always does. Before this, every verdict was
//    taken: after a one-node cut healed, the cut-off node's "dead" verdicts on the other seven made all
//    seven rejoin (issue 28). The accuser that won is where the daemon rejoins (rejoinVia()): joining
//    through a member of the losing side would give the new life that side's stale tombstones.
//    A verdict we refuse can be one-sided (the accuser's timer ran while only its links to us were slow,
//    or it took our death second-hand): then we declare the accuser dead ourselves (returnVerdict), so
//    that it hears of its own death, contests it, is outnumbered by our table and rejoins. Without that,
//    the accuser kept its tombstone, we kept it live, and the views stayed apart for good.
//    While a verdict on us is contested, the same message's Dead verdicts on members we hold live are not
//    applied either: they belong to the other side of the same partition.
//  - Second-hand deaths of members we hear from: a Dead verdict on member X, heard from someone else while
//    X itself spoke to us within the last suspicion timeout (or the JoinReply we joined with listed it
//    live within that time), becomes a suspicion we hold ourselves: X
//    refutes it if it is alive, and our own timer declares it dead if not. The verdict came from a node
//    that could not reach X, which says nothing about us reaching it; taken at once it took every
//    neighbour from a node of the healed side in tests/netns/netns_split.sh, and that node, alone, ran the
//    rest of its rounds at compute speed and left the run.
//  - Verdicts from the dead are not believed: a message from a member we hold Dead in the life it speaks
//    for (it has not heard the verdict yet: the losing side of a healed partition before it rejoins) has
//    its Suspect and Dead records about third parties ignored; its own record, its news of members alive
//    and what it says about us (the contest above) are still read. Those verdicts date from the cut: a
//    winner that had rejoined took a loser's verdict on a winner whose link to it was not back yet, passed
//    it on, and that winner, outnumbered by its accuser's table, rejoined too (4/4 splits healed link by
//    link within 0.3 s: 15 winners rejoined in 40 seeded runs, none since;
//    tests/unit/daemon/test_node_inprocess.cc).
//  - A rumour older than what we know (a refuted suspicion, a dead member said to be alive, an older
//    incarnation) is answered with our record, so a node still spreading it is corrected at once.
//  - Dissemination: every state change is queued (one entry per member, newest first) and piggybacked on
//    Ping/Ack/PingReq/Leave/Gossip messages, at most max_piggyback per message and
//    retransmit_mult * ceil(log10(n+1)) times each. Once those run out nothing repeats a record, so a
//    message with room also carries one Alive member's record (not the receiver's), the members taken in
//    turn: anti-entropy, a light form of what memberlist's periodic full-state push-pull is for. Two nodes
//    that joined at once through different seeds, each missing from the other's JoinReply, whose join
//    gossip then missed each other, never learned of each other and never probed each other, and their
//    ring neighbours differed for good (2 in 1000 simulated startups of 8 nodes under load). In turn, not
//    at random, so that no draw of the Rng moves. A side effect: a member that holds the record's subject
//    Dead answers with its tombstone (the older-rumour rule above), so a one-sided verdict keeps reaching
//    bystanders until it is settled, where before it spread for its few retransmissions only.
//  - Cluster identity: every Join carries the joiner's identity (MembershipOptions::identity, opaque
//    here; the daemon's is daemon/node/cluster_identity.h). A member whose own differs answers with a
//    Refuse carrying its identity and takes nothing of the joiner into its table; both sides keep the
//    pair for the daemon to report (takeRefusals, refusedBy). A Refuse counts only while we have no member
//    list or are isolated, i.e. when a Join of ours can be what it answers. Every other message carries the
//    identity's 64-bit fingerprint (core/fnv1a.h): one with another fingerprint is dropped whole, nothing of it
//    applied (its sender record included), counted (stats().foreign_messages, a Foreign refusal for the
//    daemon to report) and answered with a Refuse carrying our identity. Before, only a Join was compared:
//    a node left running with its old configuration while the rest of its cluster restarted with a new one
//    probed the new nodes at their old addresses, and each took it in from the sender record of a Ping
//    (issue 28). Such a straggler gets no answer but Refuses, loses every member, knocks with a Join and is
//    refused by name.
//  - Owned ids: every record carries the member's `instance`, a random id of its data directory (0:
//    unknown). A Join naming an id we hold live (or our own) with another non-zero instance is a second
//    node claiming that id (another data directory): it is refused, and the member already there goes on.
//    The same instance at any incarnation is that node restarted. Issue 28: a duplicate node.id was
//    accepted and its namesake rejected thousands of frames as late or duplicate, with no error anywhere.
//  - Leave: self becomes Left, a Leave goes to up to indirect_probes+1 live members who mark it Left at once
//    and gossip it on. The node then stops probing but, until the daemon stops it, answers pings with an Ack
//    carrying its Left record, so a prober that has not heard of the leave yet does not suspect it.
//  - Partition healing: SWIM never probes the dead, so a node cut off from everyone (its network was
//    disconnected) declares all others dead while they declare it dead, and nothing would bring them
//    together again. A joined node whose only live member is itself, but who holds members Dead (not
//    Left), therefore sends a Join every probe_interval, round-robin to those members and its seeds (it
//    is isolated(): the daemon holds its rounds meanwhile). The answer of a member that holds it dead (a
//    JoinReply, which carries that verdict and the member's table) is a contested verdict (above): alone,
//    it loses the comparison, declaredDead() turns true and the daemon rejoins as a new incarnation
//    through that member; a member that is really dead answers nothing.
//  - A transport hint (hintUnreachable) starts an extra probe at once: it can lead to suspicion, never
//    straight to death.
//  - Pause detection (Lifeguard's local health, simplified): if tick() is not called for more than two
//    probe intervals, the node was not running (SIGSTOP, swapped out); it drops its in-flight probes without
//    suspecting anyone and restarts its suspicion timers, since it could not have heard refutations.
//    The caller should tick at least every probe_timeout / 2.
//
// Wire format (little-endian, version 3): every message is
//     u32 tag "GSWM", u8 version, u8 kind, u64 fingerprint, Record sender, body(kind), u16 n,
//     Record[n] piggybacked updates
// where fingerprint = fnv1a64 (core/fnv1a.h) of MembershipOptions::identity (checked on every kind but Join and Refuse),
// and Record = u32 id (not kUnknownPeer), u64 incarnation, u64 instance, u64 version, u8 state
// (MemberState), u16 length + endpoint bytes (1 to 256).
// The sender record must name the frame's sender and be Alive or Left (Left in a Leave). Kinds and bodies:
//     1 Join       u16 length + identity   ask the receiver for its member list (version 1: empty)
//     2 JoinReply  u32 n, Record[n]        the whole table, n <= 65536
//     3 Ping       u32 seq, u32 target     target must be the receiver; answered by an Ack
//     4 PingReq    u32 seq, u32 target, u64 target incarnation, u16 length + endpoint
//                                          ping target on the sender's behalf and forward its Ack
//     5 Ack        u32 seq, u32 target     `target` is alive (sent by it, or forwarded by a helper)
//     6 Leave      (empty)                 the sender leaves the group
//     7 Gossip     (empty)                 updates only (refutations, telling a node its own state)
//     8 Refuse     u8 reason, u16 length + text
//                                          the receiver's Join was refused: 1 identities differ (text: the
//                                          refuser's identity), 2 its id is taken (text: the holder's endpoint)
// Every count is checked against the bytes that remain before anything is allocated; trailing bytes are
// an error. receive() decodes the whole message before it changes anything, so a DecodeError leaves the
// state untouched.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/rng.h"
#include "core/types.h"
#include "engine/view.h"

namespace gossip::peer {

using MsClock = std::chrono::steady_clock;

enum class MemberState : std::uint8_t { Alive = 0, Suspect = 1, Dead = 2, Left = 3 };

struct MemberInfo {
  PeerId id = 0;
  Incarnation incarnation = 0;  // the node's life (bumped on every restart; persisted by the daemon)
  std::uint64_t version = 0;    // SWIM's "incarnation number", to refute suspicion; only its owner bumps it
  std::string endpoint;         // e.g. "tcp://127.0.0.1:41234"
  MemberState state = MemberState::Alive;
  std::uint64_t instance = 0;   // random id of the node's data directory, made at its first start; 0 unknown
  bool operator==(const MemberInfo&) const = default;
};

struct MembershipOptions {
  std::chrono::milliseconds probe_interval{200};
  std::chrono::milliseconds probe_timeout{100};  // wait for a direct ack before asking others
  unsigned indirect_probes = 3;
  unsigned suspicion_mult = 4;   // suspicion timeout = suspicion_mult * max(1, log10(n)) * probe_interval
  unsigned retransmit_mult = 4;  // each update is piggybacked retransmit_mult * ceil(log10(n+1)) times
  std::size_t max_piggyback = 16;  // updates per message
  std::chrono::milliseconds join_retry_initial{200};
  std::chrono::milliseconds join_retry_max{5000};
  // Every recontact_interval, ping one member we hold Dead (not Left) at its last endpoint, carrying that
  // verdict: after a partition heals, each side learns the other declared it dead, the smaller side (the
  // contested verdicts above) rejoins as new incarnations, and the halves merge again. Without it nobody
  // ever speaks to a Dead member. 0: never.
  std::chrono::milliseconds recontact_interval{2000};
  // What this node's cluster is (at most kMaxIdentity bytes): sent in every Join, compared byte for byte
  // with every Join received (header comment, "Cluster identity"). Empty matches only empty.
  std::string identity;
};

// A refused Join: who, why, and the detail the daemon reports.
struct Refusal {
  // Foreign is local only (never on the wire): messages of a node of another cluster that did not send a
  // Join here (their fingerprint differs; detail empty).
  enum class Reason : std::uint8_t { Identity = 1, DuplicateId = 2, Foreign = 3 };
  PeerId peer = 0;
  std::string endpoint;
  Reason reason = Reason::Identity;
  // Identity: the other side's identity (ours is in the options). DuplicateId: the endpoint of the live
  // member that holds the id.
  std::string detail;
  bool operator==(const Refusal&) const = default;
};

struct MembershipEvent {
  // Died also reports an Alive/Suspect incarnation replaced by a newer one of the same id (it is gone).
  enum class Kind { Joined, Suspected, Refuted, Died, Left } kind;
  PeerId id;
  Incarnation incarnation;
  bool operator==(const MembershipEvent&) const = default;
};

struct MembershipStats {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t probes_sent = 0;           // direct pings of our own probes
  std::uint64_t indirect_probes_sent = 0;  // PingReqs sent
  std::uint64_t suspicions_raised = 0;     // by our own failed probes
  std::uint64_t suspicions_refuted = 0;    // suspicions of ourselves we refuted
  std::uint64_t deaths_declared = 0;       // by our own suspicion timers
  std::uint64_t join_attempts = 0;
  std::uint64_t verdicts_contested = 0;    // Dead verdicts on us answered with a Join to the accuser
  std::uint64_t verdicts_rejected = 0;     // ...where our camp was the larger side, so we stayed
  std::uint64_t verdicts_returned = 0;     // ...and the accuser, live here until then, was declared dead by us
  std::uint64_t deaths_doubted = 0;        // second-hand deaths of members we heard from, held as suspicions
  std::uint64_t foreign_messages = 0;      // messages of another cluster's fingerprint, dropped (Cluster identity)
  bool operator==(const MembershipStats&) const = default;
};

class Membership {
 public:
  // to == kUnknownPeer for a seed whose id is not known yet; endpoint always set. Called synchronously from
  // tick/receive/leave/hintUnreachable: it must queue the bytes, not call back into this object.
  using SendFn = std::function<void(PeerId to, const std::string& endpoint, Bytes payload)>;
  static constexpr PeerId kUnknownPeer = 0xFFFFFFFFu;
  static constexpr std::size_t kMaxEndpoint = 256;
  static constexpr std::size_t kMaxMembers = 65536;
  static constexpr std::size_t kMaxPiggyback = 1024;  // accepted per message
  static constexpr std::size_t kMaxIdentity = 8192;
  // 2: Join carries the identity, records the instance, Refuse; 3: every message the identity's fingerprint.
  static constexpr std::uint8_t kWireVersion = 3;

  Membership(MemberInfo self, std::vector<std::string> seeds, MembershipOptions options, SendFn send,
             std::uint64_t rng_seed);

  void tick(MsClock::time_point now);  // probes, ack timeouts, indirect probes, suspicion expiry, join retries
  // One message from `from` (the daemon read the sender id from its authenticated frame header). Throws
  // DecodeError on malformed bytes, leaving the state unchanged.
  void receive(PeerId from, std::span<const std::byte> payload, MsClock::time_point now);
  void leave(MsClock::time_point now);  // graceful leave: announce Left to several members
  // A hint from the transport that a connection to `id` broke: probe it now (suspicion, never death).
  void hintUnreachable(PeerId id, MsClock::time_point now);

  bool joined() const { return joined_; }
  bool declaredDead() const { return declared_dead_; }
  bool hasLeft() const { return left_; }
  // Joined, and every other member we know of is Dead (none Left only): we lost the cluster (our network
  // was cut, or everyone else crashed) and knock on the dead until someone answers. False for a first
  // node still alone, and for the last one of a run whose others left.
  bool isolated() const;
  // Once declaredDead() by a contested verdict: the endpoint of the accuser whose side won, to rejoin
  // through (its side is the cluster that goes on). Empty otherwise.
  const std::string& rejoinVia() const { return rejoin_via_; }
  const MemberInfo& self() const { return members_.at(self_id_).info; }
  std::vector<MemberInfo> members() const;        // everyone known, any state, sorted by id
  std::vector<engine::Member> alive() const;      // Alive + Suspect, incl. self, sorted by id
  std::vector<MembershipEvent> takeEvents();      // since the last call
  // Joins we refused since the last call (at most 64 kept; a refused node normally stops).
  std::vector<Refusal> takeRefusals();
  // The member that refused our Join, if one did: this node does not belong to that cluster.
  const std::optional<Refusal>& refusedBy() const { return refused_by_; }
  const MembershipStats& stats() const { return stats_; }
  std::chrono::milliseconds suspicionTimeout() const;

 private:
  struct Entry {
    MemberInfo info;
    MsClock::time_point suspect_since{};
    bool accused_by_us = false;          // our probe raised its current suspicion
    bool checked = false;                // we probed it ourselves halfway through the suspicion
    MsClock::time_point next_notice{};   // when we tell it again that it is suspected
    std::optional<MsClock::time_point> heard;           // its last message to us (its own record, this life)
    std::optional<MsClock::time_point> next_challenge;  // when we may contest its verdict on us again
  };
  struct Probe {
    PeerId target;
    Incarnation incarnation;
    std::uint32_t seq;
    MsClock::time_point start;
    bool indirect_sent = false;
    bool acked = false;
  };
  struct Relay {  // a ping we send on behalf of a PingReq
    PeerId requester;
    std::uint32_t requester_seq;
    PeerId target;
    MsClock::time_point expires;
  };
  struct Broadcast {
    std::uint64_t order;  // higher = newer
    unsigned left;        // transmissions remaining
  };
  struct Message;  // decoded form, defined in membership.cc
  static Message decode(PeerId from, std::span<const std::byte> payload, std::uint8_t& kind);

  std::size_t liveCount() const;
  bool isLive(PeerId id) const;
  void enqueue(PeerId id);
  void returnVerdict(PeerId accuser, Incarnation incarnation, MsClock::time_point now);
  Bytes encode(PeerId to, std::uint8_t kind, const Message& body, std::span<const PeerId> forced);
  void sendMsg(PeerId to, const std::string& endpoint, std::uint8_t kind, const Message& body,
               std::span<const PeerId> forced = {});
  void sendPing(PeerId target, const std::string& endpoint, std::uint32_t seq,
                std::span<const PeerId> forced = {});
  bool apply(const MemberInfo& rec, MsClock::time_point now, bool& refuted);
  bool accuserWins(const MemberInfo& accuser, const std::vector<MemberInfo>& table) const;
  void contest(PeerId accuser, const std::string& endpoint, MsClock::time_point now);
  // A Join's refusal, if it gets one (identity, then id ownership); nullopt lets it in.
  std::optional<Refusal> refusalOf(PeerId from, const Message& join) const;
  void suspect(PeerId id, MsClock::time_point now);
  void noticeSuspects(MsClock::time_point now);
  void startProbe(PeerId id, MsClock::time_point now);
  void handleProbes(MsClock::time_point now);
  void nextProbe(MsClock::time_point now);
  void tryJoin(MsClock::time_point now);
  void knockWhenAlone(MsClock::time_point now);
  void recontactDead(MsClock::time_point now);
  std::optional<PeerId> nextAntiEntropy(const std::vector<PeerId>& picked, PeerId to);
  std::vector<PeerId> randomLive(std::size_t k, PeerId exclude, bool alive_only);

  PeerId self_id_;
  std::vector<std::string> seeds_;
  MembershipOptions opt_;
  std::uint64_t fingerprint_;  // of opt_.identity, in every message (Cluster identity)
  SendFn send_;
  Rng rng_;
  std::map<PeerId, Entry> members_;
  std::map<PeerId, Broadcast> queue_;
  std::uint64_t next_order_ = 0;
  PeerId anti_entropy_after_ = 0;  // the member whose record the anti-entropy slot carried last
  std::vector<Probe> probes_;
  std::map<std::uint32_t, Relay> relays_;  // by our seq
  std::uint32_t next_seq_ = 1;
  std::vector<PeerId> probe_order_;
  std::size_t probe_pos_ = 0;
  std::optional<MsClock::time_point> last_tick_;
  std::optional<MsClock::time_point> resumed_at_;  // when tick() last found we had not been running
  std::optional<MsClock::time_point> next_probe_;
  std::optional<MsClock::time_point> next_join_;
  std::optional<MsClock::time_point> next_recontact_;
  std::chrono::milliseconds join_backoff_{0};
  std::size_t join_index_ = 0;
  std::optional<MsClock::time_point> next_knock_;  // partition healing (knockWhenAlone)
  std::size_t knock_index_ = 0;
  bool got_list_ = false;
  bool joined_ = false;
  bool declared_dead_ = false;
  bool left_ = false;
  std::string rejoin_via_;
  std::vector<Refusal> refusals_;
  std::optional<Refusal> refused_by_;
  std::vector<MembershipEvent> events_;
  MembershipStats stats_;
};

}  // namespace gossip::peer
