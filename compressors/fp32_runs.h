#pragma once
// An fp32 body as it arrived, and a walk over several of them in step.
//
// A large payload is read where the transport received it, in its parts (algorithm.h, Incoming::parts;
// engine/transport.h): a body is then one or more runs of whole values, in order, not one span. The fp32
// mixes (compressors/cast.h, algorithms/primal_dual_fp32.h) run in blocks of 4,096 values; Fp32RunWalk cuts a
// block where any body's run ends, so the block kernels still see one pointer per body and read it
// sequentially. With 1 MiB parts that is one extra cut per 262,144 values: the kernels run as before, and
// the copy of each received model into one buffer (a memcpy and 4 bytes per parameter per neighbour) is gone.
//
// Not thread-safe: a walk belongs to one pass of one thread (the mixes keep one per thread).
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "core/error.h"

namespace gossip::compress {

// The runs of one body, each a whole number of 4-byte values (fp32BodyRuns checks that), in order.
using Fp32Runs = std::span<const std::span<const std::byte>>;

class Fp32RunWalk {
 public:
  // Starts a pass at value 0 of every body. The bodies must each hold at least as many values as the pass
  // reads (their callers check the length first); the runs must outlive the pass.
  void reset(std::span<const Fp32Runs> bodies) {
    cursors_.clear();
    for (const Fp32Runs& b : bodies) cursors_.push_back({b.data(), b.data() + b.size(), 0});
    at_.assign(bodies.size(), nullptr);
  }

  // The values [first, first + n) of a pass over `dim` values in blocks of `block`: to the end of the block
  // `first` lies in, or less where a body's run ends first (blocks stay at multiples of `block`, so a body
  // in parts splits only the blocks that straddle a part's end). at()[k] then points at body k's value
  // `first`. Calls go forward: `first` never decreases.
  std::size_t next(std::size_t first, std::size_t dim, std::size_t block) {
    std::size_t n = std::min(dim, (first / block + 1) * block) - first;
    for (std::size_t k = 0; k < cursors_.size(); ++k) {
      Cursor& c = cursors_[k];
      while (c.run != c.end && first >= c.runFirst + c.run->size() / 4) {
        c.runFirst += c.run->size() / 4;
        ++c.run;
      }
      GOSSIP_CHECK(c.run != c.end, "Fp32RunWalk: a body ends before the pass does");
      at_[k] = c.run->data() + 4 * (first - c.runFirst);
      n = std::min(n, c.runFirst + c.run->size() / 4 - first);
    }
    return n;
  }

  const std::byte* const* at() const { return at_.data(); }

 private:
  struct Cursor {
    const std::span<const std::byte>* run;
    const std::span<const std::byte>* end;
    std::size_t runFirst;  // index of the run's first value in the body
  };
  std::vector<Cursor> cursors_;
  std::vector<const std::byte*> at_;
};

}  // namespace gossip::compress
