#pragma once
// Error-feedback memory usable with any compressor (EF / DeepSqueeze style), with ScaleCom's optional
// low-pass filter beta:  p = m + x;  c = C(p);  m <- (1 - beta) m + beta (p - c).  beta = 1 is plain EF.
//
// Invariants (tested): with beta = 1 the memory equals p - c exactly, so over any number of rounds the
// sum of transmitted values plus the memory equals the sum of inputs; with beta < 1 the memory is the
// exponential average of the residuals p - c. c is obtained by decoding the encoded bytes, so it is
// bit-identical to what receivers reconstruct (ALGORITHMS.md §3, rule 1).
// Ownership: holds a reference to the compressor, which must outlive it. Not thread-safe (one per node).
#include <cstdint>
#include <span>
#include <vector>

#include "compressors/compressor.h"
#include "core/real.h"

namespace gossip::compress {

class ErrorFeedback {
 public:
  ErrorFeedback(const Compressor& c, std::uint32_t dim, double beta = 1.0);

  // Encodes p = m + x into out and updates the memory, with c = decode(out), exactly what receivers reconstruct.
  // No dense copy of c is made: with beta = 1 the memory itself holds p while it is encoded and then has c
  // subtracted from the bytes (for top-k, k values); beta < 1 needs p aside (d values, made on first use).
  // Checks x on the way: false when some x_i is NaN or infinite (the memory is then spoilt and out
  // unspecified; the caller ends the run: DeepSqueeze's "the model became non-finite").
  [[nodiscard]] bool compress(std::span<const Real> x, Rng& rng, Encoded& out);

  std::span<const Real> memory() const { return memory_; }
  // Restores a checkpointed memory; m.size() must equal the dimension.
  void setMemory(std::span<const Real> m);
  void reset();

 private:
  const Compressor& c_;
  double beta_;
  std::vector<Real> memory_;
  std::vector<Real> p_;
};

}  // namespace gossip::compress
