#pragma once
// AtomicFile: a file replaced whole or not at all, written in two steps that may run on different threads.
//
//   write()    (the writer's thread) appends to a temp file beside the target: "<target>.tmp", or with
//              uniqueTemp "<target>.<n>.tmp", n unique in the process, for a target two writes of which may
//              be in flight at once (a checkpoint streamed while the previous one of the same round is
//              still being committed) and must not share a temp file.
//   commit()   (any one thread, later) fsyncs the temp file (durable), renames it over the target and
//              fsyncs the directory, so a crash at any moment leaves the old file or the new one, never a
//              torn one. A reader never sees a partial file.
//   destroyed without commit: the temp file is removed. One a crash leaves behind is never read; the
//   owner of the directory removes such files at its next start (isTempOf).
//
// Why two steps: a 100M-parameter checkpoint streamed to its file goes to the page cache at memory speed
// on the node's thread, so no copy of the state is held, and the slow part (fsync) runs on a background
// thread (daemon/node/checkpoint_store.h). IoError naming the path and errno on any failure.
//
// Threading: one thread at a time (write then commit, handed over through the owner's queue).
#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string_view>

namespace gossip::engine {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target, bool uniqueTemp = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  // Writes `bytes` at `offset` of the temp file (a header whose checksum is known only at the end).
  void writeAt(std::size_t offset, std::span<const std::byte> bytes);
  // durable = false skips both fsyncs (a file rewritten every fraction of a second: status.json); a
  // reader still sees the old or the new file whole, a power cut may lose the update.
  void commit(bool durable = true);

  const std::filesystem::path& target() const { return target_; }

  // Whether a file name is a temp file of a write to `targetName` (cut short by a crash if no write is in
  // flight): "<targetName>.tmp" (before this class) or "<targetName>.<digits>.tmp".
  static bool isTempOf(std::string_view name, std::string_view targetName);

 private:
  std::filesystem::path target_, tmp_;
  int fd_ = -1;
  std::size_t bytes_ = 0;  // written by write(): where the next one goes
  bool committed_ = false;
};

// target written atomically from parts (no joined copy), as one AtomicFile.
void writeFileAtomic(const std::filesystem::path& target, std::initializer_list<std::span<const std::byte>> parts,
                     bool durable = true);

}  // namespace gossip::engine
