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

// Where a streaming ByteWriter sends its bytes: a state of 100M parameters is written to its checkpoint
// file in pieces instead of being held whole in memory first (engine/checkpoint.h, CheckpointFile).
class ByteSink {
 public:
  virtual void write(std::span<const std::byte> bytes) = 0;

 protected:
  ~ByteSink() = default;
};

class ByteWriter {
 public:
  explicit ByteWriter(Bytes& out) : out_(out) {}
  // Streaming: bytes gather in `buffer` and go to `sink` once it holds `flushAt` of them, and append()
  // hands a block that large to the sink without copying it. flush() sends the rest (call it at the end).
  ByteWriter(Bytes& buffer, ByteSink& sink, std::size_t flushAt = std::size_t{1} << 20)
      : out_(buffer), sink_(&sink), flushAt_(flushAt) {}

  template <class T>
    requires std::is_trivially_copyable_v<T>
  void put(T v) {
    if (sink_ && out_.size() >= flushAt_) flush();
    const std::size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }

  // Grows the buffer by n bytes (zero-filled) and returns a pointer to them.
  std::byte* reserveTail(std::size_t n) {
    if (sink_ && out_.size() >= flushAt_) flush();
    const std::size_t at = out_.size();
    out_.resize(at + n);
    return out_.data() + at;
  }

  // Appends the bytes of `b` (a block of state: a streaming writer sends a large one straight to its sink).
  void append(std::span<const std::byte> b) {
    if (sink_ && b.size() >= flushAt_) {
      flush();
      sink_->write(b);
      flushed_ += b.size();
      return;
    }
    if (!b.empty()) std::memcpy(reserveTail(b.size()), b.data(), b.size());
  }

  // Sends what the buffer holds to the sink (streaming only; a no-op otherwise).
  void flush() {
    if (!sink_ || out_.empty()) return;
    sink_->write(out_);
    flushed_ += out_.size();
    out_.clear();
  }

  // Bytes written so far, sent to the sink or still buffered.
  std::size_t size() const { return flushed_ + out_.size(); }

 private:
  Bytes& out_;
  ByteSink* sink_ = nullptr;
  std::size_t flushAt_ = 0;
  std::size_t flushed_ = 0;
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
