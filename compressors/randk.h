#pragma once
// Random-k sparsification with the seed carried in the payload, in a biased form (keep k entries,
// delta = k/d) and an unbiased form (scale by d/k, omega = d/k - 1).
//
// Wire contract: the payload carries a u64 seed drawn from the encoder's injected Rng; the receiver
// rebuilds the index set with randomSupport(seed, dim, k), so that procedure is frozen:
//   g = gossip::Rng(seed)                      (xoshiro256** seeded through splitmix64, core/rng.h)
//   S = {}; for j = dim-k, ..., dim-1:         (Floyd's sampling without replacement)
//     t = g.below(j + 1)                       (Lemire multiply-and-reject, uniform in [0, j])
//     if t not in S: S += {t} else: S += {j}
//   indices = S in ascending order; value v_m belongs to the m-th smallest index.
// Changing any step (generator, bounded draw, loop direction) breaks decoding across versions.
#include <cstdint>
#include <memory>
#include <vector>

#include "compressors/compressor.h"

namespace gossip::compress {

std::unique_ptr<Compressor> makeRandK(const CompressorSpec& spec);

// The k-subset of [0, dim) described above, sorted ascending, written into idx. Requires k <= dim.
void randomSupport(std::uint64_t seed, std::uint32_t dim, std::uint32_t k, std::vector<std::uint32_t>& idx);

}  // namespace gossip::compress
