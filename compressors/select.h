#pragma once
// Top-k selection and sparse index coding, shared by topk, topk_quant and cltk.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/bytes.h"

namespace gossip::compress {

// Writes into idx (resized to min(k, x.size())) the indices of the k entries of largest |x|, sorted
// ascending. Ties in |x| are broken by the lowest index first, so the result is deterministic.
void selectTopK(std::span<const float> x, std::uint32_t k, std::vector<std::uint32_t>& idx);
void selectTopK(std::span<const double> x, std::uint32_t k, std::vector<std::uint32_t>& idx);

// m += x (each sum rounded once), then selectTopK(m, k, idx), in one pass over both vectors where the two
// took two (error feedback's p = m + x and its selection; with the caller's finiteness check of x, three).
// Returns false when some x_i is NaN or infinite: m then holds the sums and idx is unspecified.
bool addAndSelectTopK(std::span<float> m, std::span<const float> x, std::uint32_t k, std::vector<std::uint32_t>& idx);
bool addAndSelectTopK(std::span<double> m, std::span<const double> x, std::uint32_t k, std::vector<std::uint32_t>& idx);

// Index-set coding: whichever is smaller of fixed-width bit-packed indices (ceil(log2 dim) bits each)
// and a dim-bit bitmap. The first byte written says which.
std::size_t indexBytes(std::uint32_t dim, std::uint32_t k);
void writeIndices(std::span<const std::uint32_t> sortedIdx, std::uint32_t dim, ByteWriter& w);
// Reads k indices; throws DecodeError unless they are strictly increasing and < dim.
void readIndices(ByteReader& r, std::uint32_t dim, std::uint32_t k, std::vector<std::uint32_t>& idx);

}  // namespace gossip::compress
