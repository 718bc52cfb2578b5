#pragma once
// IDX files (the MNIST / Fashion-MNIST container), gzip or plain. Format: two zero bytes, a type code
// (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64), the number of dimensions, one big-endian
// u32 per dimension, then the values big-endian in row-major order. Errors name the byte offset.
#include <cstdint>
#include <string>
#include <vector>

#include "training/dataset.h"

namespace gossip::training {

// The validated header of an IDX buffer: the buffer is known to hold exactly `count` values of `type`
// starting at `data_offset`, so values can be decoded without further bounds checks.
struct IdxHeader {
  unsigned char type = 0;
  std::vector<std::uint32_t> dims;
  std::size_t data_offset = 0;
  std::size_t count = 0;
  std::size_t valueSize() const;
};

// `what` names the source in error messages (usually the file path).
IdxHeader parseIdxHeader(const std::vector<unsigned char>& bytes, const std::string& what);
// Value i (< h.count) converted to double.
double idxValue(const std::vector<unsigned char>& bytes, const IdxHeader& h, std::size_t i);

// Images (N x ... ; features = product of the trailing dimensions) and labels (N, non-negative
// integers). u8 images are scaled to [0, 1]; other types are kept as they are. classes = max label + 1.
Dataset readIdx(const std::string& images_path, const std::string& labels_path);

}  // namespace gossip::training
