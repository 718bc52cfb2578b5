#pragma once
// A node's model where a user can load it: dir/model.npy (NumPy format 1.0, '<f4' ('<f8' in the float64
// build), shape (n,), the data 64-byte aligned as the format asks) and dir/model.json (model kind, shape, layout, round, node). Both
// are written atomically (temp file, fsync, rename, fsync of the directory): a reader sees the old model
// or the new one, never a torn file. IoError naming the path on failure.
#include <filesystem>
#include <memory>
#include <span>

#include <nlohmann/json.hpp>

#include <initializer_list>

#include "core/bytes.h"
#include "core/real.h"
#include "engine/atomic_file.h"

namespace gossip::daemon {

void writeModel(const std::filesystem::path& dir, std::span<const Real> x, const nlohmann::json& meta);
// The two halves of writeModel, for a checkpoint (daemon/node/checkpoint_store.h): beginModel writes
// model.npy's bytes to a temp file of its own on the caller's thread (no copy of x is kept), and the
// returned file's commit() makes it durable under dir/model.npy, on the writer's thread; writeMeta writes
// model.json atomically and durably.
std::unique_ptr<engine::AtomicFile> beginModel(const std::filesystem::path& dir, std::span<const Real> x);
void writeMeta(const std::filesystem::path& dir, const nlohmann::json& meta);

// The .npy bytes of a state vector: <f4 in the float32 build, <f8 in the float64 one (exposed for tests).
Bytes npyBytes(std::span<const Real> x);
// Only the header that precedes n values in npyBytes: writeModel writes it and the values from where they
// are, so a checkpoint of a large model does not hold a second copy of it while model.npy is written.
Bytes npyHeader(std::size_t n);

// Writes `bytes` to `path` atomically (temp, fsync, rename, fsync dir); IoError naming the path. With
// durable = false the two fsyncs are skipped: readers still see the old or the new file whole, but a power
// failure may lose the update (for files rewritten every fraction of a second, such as status.json, whose
// fsyncs would otherwise stall the node's loop for milliseconds each time).
void writeFileAtomic(const std::filesystem::path& path, std::span<const std::byte> bytes, bool durable = true);
// The same with the file's content in parts, written one after the other (no joined copy).
void writeFileAtomic(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> parts,
                     bool durable = true);

}  // namespace gossip::daemon
