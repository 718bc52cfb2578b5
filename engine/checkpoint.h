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
// writeCheckpoint: write to "<path>.tmp", fsync it, rename over <path>, fsync the directory, so a crash
// at any moment leaves either the old or the new file, never a torn one.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/bytes.h"

namespace gossip::engine {

inline constexpr std::uint32_t kCheckpointVersion = 1;
inline constexpr std::size_t kCheckpointHeaderBytes = 32;

// The container around a body, in memory (what writeCheckpoint puts in the file).
Bytes wrapCheckpoint(std::span<const std::byte> body);
// Validates a whole container and returns its body; `name` is used in error messages.
Bytes unwrapCheckpoint(std::span<const std::byte> file, const std::string& name);

void writeCheckpoint(const std::filesystem::path& path, std::span<const std::byte> body);
Bytes readCheckpoint(const std::filesystem::path& path);

}  // namespace gossip::engine
