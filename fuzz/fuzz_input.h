#pragma once
// Reads typed values from the front of a fuzz input; past the end every read yields zeros, so a target
// never needs to check lengths and every input is a valid program.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/bytes.h"

namespace gossip::fuzz {

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  template <class T>
  T get() {
    T v{};
    const std::size_t n = std::min(sizeof v, size_ - std::min(pos_, size_));
    if (n) std::memcpy(&v, data_ + pos_, n);
    pos_ += sizeof v;
    return v;
  }
  Bytes bytes(std::size_t n) {
    const std::size_t have = size_ - std::min(pos_, size_);
    n = std::min(n, have);
    Bytes b(n);
    if (n) std::memcpy(b.data(), data_ + pos_, n);
    pos_ += n;
    return b;
  }
  Bytes rest() { return bytes(size_); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace gossip::fuzz
