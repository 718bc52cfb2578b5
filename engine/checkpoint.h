#pragma once
// Checkpoint files: an opaque state blob (produced by NodeEngine::save) in a versioned, checksummed
// container, written atomically.
//
// File layout, little-endian:
//   off size
//    0   8  magic "GSPDCKPT"
//    8   4  format version (kCheckpointVersion)
//   12   4  flags: bit 0 set = the body's state is float32 (core/real.h), clear = float64 (all earlier files)
//   16   8  body length N
//   24   4  crc32c of the body
//   28   4  crc32c of bytes 0..27
//   32   N  body
// readCheckpoint checks the file size against N before allocating, then both checksums, and throws
// DataError naming the file and what is wrong (truncated, bad magic, unknown version, checksum mismatch, state of the other precision).
//
// Writing: a temp file beside <path> (engine/atomic_file.h), fsync, rename over <path>, fsync of the
// directory, so a crash at any moment leaves either the old or the new file, never a torn one.
// CheckpointFile streams the body to the temp file as it is serialized (the header, whose checksums are
// known only at the end, is written last over a placeholder), so a 100M-parameter state is never held
// twice in memory; the fsync and rename (commit) may run later, on another thread.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/bytes.h"
#include "engine/atomic_file.h"

namespace gossip::engine {

inline constexpr std::uint32_t kCheckpointVersion = 1;
inline constexpr std::size_t kCheckpointHeaderBytes = 32;

// The container around a body, in memory (what writeCheckpoint puts in the file).
Bytes wrapCheckpoint(std::span<const std::byte> body);
// Validates a whole container and returns its body; `name` is used in error messages.
Bytes unwrapCheckpoint(std::span<const std::byte> file, const std::string& name);

// A checkpoint written as its body is serialized: a ByteSink for a streaming ByteWriter (core/bytes.h).
// write() appends body bytes (crc32c computed on the way), finish() writes the header, commit() makes the
// file durable under <path>. Destroyed before commit: nothing is left (the temp file is removed). Its
// temp file is "<path>.<n>.tmp" (AtomicFile::isTempOf). IoError on any failure. One thread at a time.
class CheckpointFile final : public ByteSink {
 public:
  explicit CheckpointFile(std::filesystem::path path);
  void write(std::span<const std::byte> bytes) override;
  void finish();
  void commit();
  const std::filesystem::path& path() const { return file_.target(); }
  std::uint64_t bodyBytes() const { return bodyBytes_; }

 private:
  AtomicFile file_;
  std::uint64_t bodyBytes_ = 0;
  std::uint32_t crc_ = 0;
  bool finished_ = false;
};

void writeCheckpoint(const std::filesystem::path& path, std::span<const std::byte> body);
Bytes readCheckpoint(const std::filesystem::path& path);

}  // namespace gossip::engine
