#pragma once
// Little-endian byte buffers for payloads and headers. ByteReader checks every read against the
// remaining length and throws DecodeError, so a decoder built on it cannot read out of bounds.
// gossipd targets little-endian hosts only (checked at compile time); the wire is little-endian.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace gossip {

static_assert(std::endian::native == std::endian::little, "gossipd assumes a little-endian host");

using Bytes = std::vector<std::byte>;

class ByteWriter {
 public:
  explicit ByteWriter(Bytes& out) : out_(out) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(T v) {
    const std::size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }

  // Grows the buffer by n bytes (zero-filled) and returns a pointer to them.
  std::byte* reserveTail(std::size_t n) {
    const std::size_t at = out_.size();
    out_.resize(at + n);
    return out_.data() + at;
  }

  std::size_t size() const { return out_.size(); }

 private:
  Bytes& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in, const char* what = "payload") : in_(in), what_(what) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Returns the next n bytes and advances past them.
  std::span<const std::byte> take(std::size_t n) {
    need(n);
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  std::size_t remaining() const { return in_.size() - pos_; }
  std::size_t position() const { return pos_; }

  // Throws unless every byte has been consumed: a long buffer is as malformed as a short one.
  void expectEnd() const {
    if (remaining() != 0)
      throw DecodeError(std::string(what_) + ": " + std::to_string(remaining()) + " trailing bytes");
  }

 private:
  void need(std::size_t n) const {
    if (n > remaining())
      throw DecodeError(std::string(what_) + ": truncated (need " + std::to_string(n) + " bytes, have " +
                        std::to_string(remaining()) + ")");
  }
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  const char* what_;
};

}  // namespace gossip
