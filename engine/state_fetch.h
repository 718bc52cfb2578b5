#pragma once
// StateFetch: the receiving side of a state transfer (engine/state_transfer.cc), as a schedule of requests.
// A joining, restarted or lagging node pulls a neighbour's model in chunks, from several neighbours at
// once where it has them. Why pull and not push: a 100M-parameter model is 400 MB; pushed whole it filled
// the sender's send queue (256 frames per channel, the oldest dropped first) and doubled the sender's memory
// with serialised chunks. Pulled in windows, each source has at most `window` chunks in flight, a faster
// source serves more of the model, and a source that falls silent loses its outstanding chunks to the others.
//
// The receiver fixes the chunk grid (chunk k holds values [k*C, min((k+1)*C, dim))) and asks for runs of
// whole chunks: a request is (first value, count, C), and the sender answers with one State frame per chunk.
// Every chunk arrives with its frame's payload checksum (engine/frame.h); the assembly keeps what arrived
// across sources, silences and new requests (resumable), and is complete when every chunk is in.
//
// The model is a stitch of the sources' models (each chunk from whichever source answered it, at the round
// that source had then). For the methods this node uses it the result is as good as any one of them: the
// stitched values are those of nodes within a few rounds of consensus with each other, and the node mixes
// with those neighbours from its first round on. The round to continue from is the highest round seen.
//
// Time is passed in (milliseconds of a monotonic clock); no transport: due() says which requests to send.
// Not thread-safe: the engine's thread owns it.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "core/bytes.h"
#include "core/real.h"
#include "core/types.h"

namespace gossip::engine {

struct StateFetchOptions {
  std::size_t chunk_values = std::size_t{1} << 17;  // C: values per State frame (512 KiB of float32)
  std::size_t request_chunks = 8;                   // chunks per request (4 MiB of float32)
  std::size_t window_chunks = 32;                    // chunks in flight per source (16 MiB of float32)
  // A source with chunks in flight that sends none for this long loses them to the other sources (and to
  // itself, after as long again). It covers a sender busy in a long round: it answers between rounds.
  std::uint64_t silence_ms = 2000;
  // A source that has not answered yet loses its chunks after this long, and is asked again after as long
  // again: a joiner's first requests reach neighbours that do not know it yet (refused as from an unknown
  // sender) or that fetch a model themselves (declined).
  std::uint64_t first_silence_ms = 500;
};

// One request to send: ask `to` for values [at, at + count) in chunks of `chunk` values.
struct StateAsk {
  PeerId to = 0;
  std::uint64_t at = 0;
  std::uint64_t count = 0;
  std::uint64_t chunk = 0;
};

// Whether a request for values [at, at + count) of a vector of `dim` values, in chunks of `chunk`, is within
// what a sender serves: chunks of at most 4M values (16 MiB of float32), at most 64 of them per request, so
// that one request can make the sender queue only a bounded amount (engine/state_transfer.cc).
bool askInBounds(const StateAsk& ask, std::uint64_t dim);
// An ask's range on the wire: u64 first value | u64 count | u64 values per chunk (`to` is the frame's peer).
void putAsk(ByteWriter& w, const StateAsk& ask);
StateAsk getAsk(ByteReader& r, PeerId from);
// Writes one chunk, values [at, at + n) of `all`: u64 dimension | u64 at | array<Real>.
void putChunk(ByteWriter& w, std::span<const Real> all, std::uint64_t at, std::size_t n);
// Reads what putChunk wrote (DecodeError on a short or malformed chunk).
struct Chunk {
  std::uint64_t dim = 0;
  std::uint64_t at = 0;
  std::vector<Real> values;
};
Chunk getChunk(ByteReader& r);

class StateFetch {
 public:
  StateFetch(std::size_t dim, StateFetchOptions options, std::uint64_t nowMs);

  std::size_t dim() const { return static_cast<std::size_t>(values_.size()); }
  // Adds neighbours to fetch from (one already known is left as it is).
  void addSources(std::span<const PeerId> sources, std::uint64_t nowMs);
  bool isSource(PeerId id) const;
  // Places a chunk; nullopt when taken (or a harmless duplicate), else the rejection reason.
  std::optional<std::string> place(PeerId from, Round round, std::uint64_t at, std::span<const Real> values,
                                   std::uint64_t nowMs);
  // Requests to send now: free chunks given to sources with room in their window, and the chunks of
  // sources silent for `silence_ms` handed back.
  void due(std::uint64_t nowMs, std::vector<StateAsk>& out);

  bool complete() const { return missing_ == 0; }
  Round round() const { return round_; }  // highest round of any chunk taken
  // The assembled values (an Eigen vector, the algorithms' Vec: a completed edge state is moved into the
  // algorithm, not copied). Not zeroed: a value is defined once its chunk is placed.
  Eigen::Matrix<Real, Eigen::Dynamic, 1>& values() { return values_; }
  std::size_t valuesHave() const { return valuesHave_; }
  std::size_t sourcesServing() const;                    // sources that sent at least one chunk
  std::uint64_t lastProgressMs() const { return lastProgressMs_; }  // start, or the last chunk taken

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Source {
    PeerId id = 0;
    std::size_t inFlight = 0;       // chunks assigned to it and not yet arrived
    std::uint64_t heardMs = 0;      // last chunk from it, or when its window was last opened from empty
    std::uint64_t pausedUntil = 0;  // after a silence: not given new chunks before this
    bool served = false;
  };
  std::size_t chunkOf(std::uint64_t at) const { return static_cast<std::size_t>(at / opt_.chunk_values); }
  std::size_t chunkLength(std::size_t k) const;
  Source* source(PeerId id);
  // Its chunks back to the free pool; no new ones for pauseMs.
  void release(std::size_t source, std::uint64_t nowMs, std::uint64_t pauseMs);

  StateFetchOptions opt_;
  Eigen::Matrix<Real, Eigen::Dynamic, 1> values_;
  std::vector<bool> have_;              // by chunk
  std::vector<std::uint32_t> owner_;    // by chunk: index into sources_ of the source asked for it, or kNone
  std::vector<Source> sources_;
  std::size_t missing_ = 0;             // chunks not yet taken
  std::size_t valuesHave_ = 0;          // values of the chunks taken (read by the daemon on every step)
  std::size_t cursor_ = 0;              // no free chunk below this one (a hint; reset when chunks are freed)
  Round round_ = 0;
  std::uint64_t lastProgressMs_ = 0;
};

}  // namespace gossip::engine
