#pragma once
// IDX files (the MNIST / Fashion-MNIST container), gzip or plain. Format: two zero bytes, a type code
// (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64), the number of dimensions, one big-endian
// u32 per dimension, then the values big-endian in row-major order. Errors name the byte offset.
#include <cstdint>
#include <string>
#include <vector>

#include "training/dataset.h"
#include "training/file_bytes.h"

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

// The labels file alone (1-dimensional, non-negative integers), checked as readIdx checks it.
std::vector<std::int32_t> readIdxLabels(const std::string& labels_path);

// The rows of an IDX images file, one at a time in file order, converted and checked as readIdx does:
// a reader that keeps only some rows (a daemon's shard) never holds the whole file. A row that is not
// wanted is still inflated but not converted.
class IdxRowStream {
 public:
  explicit IdxRowStream(const std::string& images_path);
  std::size_t rows() const { return rows_; }
  std::size_t features() const { return features_; }
  // The next row into dst (features() floats); skip() passes over it. DataError on an early end.
  void next(float* dst);
  void skip();
  // Reads to the end: DataError if rows are missing, bytes follow the last row, or the gzip is bad.
  void finish();

 private:
  void fill();
  detail::FileStream in_;
  IdxHeader header_;
  std::size_t rows_ = 0, features_ = 0, done_ = 0;
  std::vector<unsigned char> buf_;
};

}  // namespace gossip::training
