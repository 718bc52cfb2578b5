#pragma once
// CLT-k (ScaleCom, Chen et al. 2020) adapted to gossip: values sent on an index set that every node
// already knows, so messages carry k f32 values and no indices. See docs/cltk.md for how the set is
// chosen (cyclic leader, top-k of its error-compensated vector) and spread through the graph.
//
// Pieces:
//  - SharedSupport: one agreed index set with its 32-bit fingerprint (hash of dim, k and the indices).
//  - writeSupport/readSupport: the announcement through which a leader's set travels (piggybacked on
//    ordinary messages; the announcement is the only place indices go on the wire).
//  - SupportSchedule: which set each round uses (the one chosen `delay` rounds earlier) and which node
//    leads each round, with duplicate suppression for flooding.
//  - The "cltk" Compressor (makeCltk): encodes x restricted to its current support. The runtime reaches
//    the support through cltkSupport(compressor) and installs the round's set before encoding/decoding.
//
// Payload: header (param 0, dim), u32 k, u32 fingerprint, k f32 values in ascending index order. A
// receiver whose support has a different fingerprint or size rejects it with DecodeError, so nodes that
// disagree about the set never silently add values at the wrong coordinates. A receiver may be told of
// further sets it accepts (setAlsoDecodable). And a payload on the empty set (k = 0: the sender had no
// agreed set) adds nothing and is accepted by every receiver, so a node that missed an announcement
// costs its own round's values, not its neighbours' messages.
//
// Thread-safety: SharedSupport is a plain value. Unlike the other codecs a cltk codec has state (its
// support, and the set it chose when leading), so each node needs its own (CltkControl::fresh); the
// runtime installs a new set between rounds, never during encode/decode.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "compressors/compressor.h"
#include "core/bytes.h"

namespace gossip::compress {

std::uint32_t supportFingerprint(std::span<const std::uint32_t> sortedIdx, std::uint32_t dim);

class SharedSupport {
 public:
  // The empty support fits any dimension: a node with no agreed set yet sends zero values (and error
  // feedback keeps everything in memory) instead of stalling.
  SharedSupport() = default;
  // sortedIdx must be strictly increasing and < dim (GOSSIP_CHECK: a caller bug, not bad input).
  SharedSupport(std::vector<std::uint32_t> sortedIdx, std::uint32_t dim);

  bool empty() const { return idx_.empty(); }
  std::uint32_t dim() const { return dim_; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(idx_.size()); }
  std::span<const std::uint32_t> indices() const { return idx_; }
  // Fingerprint as used for a message of length dim (the empty set is hashed with the message's dim).
  std::uint32_t fingerprintFor(std::uint32_t dim) const;

  friend bool operator==(const SharedSupport& a, const SharedSupport& b) {
    return a.dim_ == b.dim_ && a.idx_ == b.idx_;
  }

 private:
  std::vector<std::uint32_t> idx_;
  std::uint32_t dim_ = 0;
  std::uint32_t fingerprint_ = 0;
};

// Leader side: the top-k of the error-compensated vector p (ties to the lowest index).
SharedSupport chooseSupport(std::span<const float> p, std::uint32_t k);
SharedSupport chooseSupport(std::span<const double> p, std::uint32_t k);

// Announcement: u32 dim, u32 k, u32 fingerprint, index set (select.h coding). readSupport checks
// every field (dim must equal expectedDim, indices valid, fingerprint recomputed) and throws DecodeError.
void writeSupport(const SharedSupport& s, ByteWriter& w);
SharedSupport readSupport(ByteReader& r, std::uint32_t expectedDim);
std::size_t supportAnnouncementBytes(std::uint32_t dim, std::uint32_t k);

// Round bookkeeping for a graph of n nodes whose announcements need `delay` rounds (the diameter, when
// flooded one hop per round) to reach everyone. A set is chosen every `period` rounds (rounds t with
// t % period == 0; the leader of such a round is (t / period) mod n) and used for `period` rounds: round t
// uses the set chosen at chosenFor(t) = floor((t - delay) / period) * period (the empty set for t < delay
// or if that announcement never arrived). period 1 is ScaleCom's schedule (a new set every round).
class SupportSchedule {
 public:
  SupportSchedule(std::uint32_t nodes, std::uint32_t delay, std::uint32_t period = 1);

  bool choosing(std::uint64_t round) const { return round % period_ == 0; }
  // The leader of a choosing round.
  std::uint32_t leader(std::uint64_t round) const { return static_cast<std::uint32_t>((round / period_) % nodes_); }
  std::uint32_t delay() const { return delay_; }
  std::uint32_t period() const { return period_; }
  // The round whose set round t uses; nullopt for t < delay.
  std::optional<std::uint64_t> chosenFor(std::uint64_t round) const {
    if (round < delay_) return std::nullopt;
    return (round - delay_) / period_ * period_;
  }

  // Records the set chosen at round `chosenAt`. Returns true the first time (the caller then forwards
  // the announcement to its neighbours), false for a duplicate. A duplicate that differs from the
  // recorded set is a DecodeError. Sets too old to be used are ignored (false).
  bool offer(std::uint64_t chosenAt, SharedSupport s);
  // Whether offer(chosenAt, s) would be a conflict (a DecodeError), without recording anything: lets a
  // runtime refuse a message before it changes any state.
  bool conflicts(std::uint64_t chosenAt, const SharedSupport& s) const;
  // The set for round t; forgets the sets no later round will use.
  SharedSupport takeFor(std::uint64_t round);

  // Checkpoint of the recorded sets (node count and delay come from the config). load validates every
  // set against dim and leaves the schedule unchanged on a DecodeError.
  void save(ByteWriter& w) const;
  void load(ByteReader& r, std::uint32_t dim);

 private:
  std::uint32_t nodes_;
  std::uint32_t delay_;
  std::uint32_t period_;
  std::uint64_t oldestUseful_ = 0;  // sets chosen before this round will never be used
  std::map<std::uint64_t, SharedSupport> pending_;
};

// CLT-k compressor; k (spec.k or spec.ratio) is the size the leader should choose via supportSize().
std::unique_ptr<Compressor> makeCltk(const CompressorSpec& spec);

// Control surface of a compressor made by makeCltk; nullptr for any other compressor.
class CltkControl {
 public:
  virtual ~CltkControl() = default;
  virtual void setSupport(SharedSupport s) = 0;
  virtual const SharedSupport& support() const = 0;
  // Further sets that payloads may use and this codec then decodes (matched by fingerprint): the set a
  // neighbour announces with the values it sends, when this node does not have it (docs/cltk.md).
  virtual void setAlsoDecodable(std::vector<SharedSupport> sets) = 0;
  virtual std::uint32_t supportSize(std::uint32_t dim) const = 0;
  // Leading: the next encode also chooses the top-k of the vector it encodes (the error-compensated
  // vector, whatever the algorithm compresses) and keeps it for takeChosen(); with useNow it installs
  // that set before encoding (delay 0: a single node). One encode only; the flag clears itself.
  virtual void leadNextEncode(bool useNow) = 0;
  virtual std::optional<SharedSupport> takeChosen() = 0;
  // A new codec with the same k rule and no support, for another node.
  virtual std::unique_ptr<Compressor> fresh() const = 0;
};
CltkControl* cltkControl(Compressor& c);
const CltkControl* cltkControl(const Compressor& c);

}  // namespace gossip::compress
