#pragma once
// The node's checkpoints on disk: data_dir/checkpoints/ckpt-<round>.gsc (engine/checkpoint.h's container
// around a run-state body) and, beside each, the model files a user loads (model.npy, model.json,
// daemon/node/model_out.h).
//
//   CheckpointStore   names, listing (newest first), load-the-newest-that-verifies, write + rotation (the
//                     newest node.keep_checkpoints stay). Synchronous; no state but the directory.
//   CheckpointWriter  the node's writes, in two halves: the node thread streams its state to the
//                     checkpoint's temp file and x to model.npy's as it serializes them (streamCheckpoint:
//                     page-cache writes at memory speed, and no copy of the state is held: a 100M-parameter
//                     DeepSqueeze node held 12 bytes per parameter more while a checkpoint was written);
//                     a Background (background.h) then fsyncs, renames, rotates and writes model.json.
//                     At most one checkpoint waits beside the one being committed; a newer one replaces a
//                     waiting older one (LatestOnly), whose temp files are then removed.
//
// The run-state body: tag "GRUN", u32 node id, u64 the round it continues at, the node's state
// (algo::Node::save). A file from another node, or one whose container or body does not verify, is
// skipped with a warning and the next older one is tried; when none verifies the node refuses to start.
//
// Threading: CheckpointStore's methods may run on any one thread at a time; the daemon lists and loads on
// the node thread before the writer exists and writes only on the Background's worker afterwards (the
// writer's drain() orders the two when the node thread reads the directory again). CheckpointWriter:
// submit(), written(), rethrowFailure() and drain() on the node thread; the write itself on the worker;
// what both touch (the last written round and time, a write's error) sits behind the writer's mutex.
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/bytes.h"
#include "core/serial.h"
#include "core/real.h"
#include "core/types.h"
#include "engine/atomic_file.h"
#include "engine/checkpoint.h"
#include "daemon/log/log.h"
#include "daemon/node/background.h"

namespace gossip::daemon {

class CheckpointStore {
 public:
  // `dir` is data_dir/checkpoints (created by the caller). keep >= 1 files stay after a write.
  CheckpointStore(std::filesystem::path dir, std::size_t keep, logging::Logger log);

  static std::string fileName(Round next);  // "ckpt-<next>.gsc"
  // The round a checkpoint file's name carries; none unless the name is exactly ckpt-<decimal>.gsc and
  // the number fits a Round.
  static std::optional<Round> roundOf(const std::filesystem::path& file);

  // The checkpoint files, newest first. A *.gsc whose name is not ckpt-<round>.gsc (a user's copy, say)
  // is skipped and logged once per name.
  std::vector<std::pair<Round, std::filesystem::path>> list() const;
  bool empty() const { return list().empty(); }

  // Tries the files newest first: the container must verify and the body must be a run state of node
  // `id`; `load` then reads the node's state (and may throw to refuse it). Returns the round the first
  // accepted file continues at; none when there is no checkpoint file. When there are files and none is
  // accepted, throws RefusedError naming the directory, the count and the newest file's reason (issue 28):
  // going on from round 0 would rotate this run's checkpoints away once the new run wrote its own (a
  // restart with another algorithm, model or node.id lost them all), and `load` may have half-filled the
  // node's state before it refused. First removes the ckpt-R.gsc.tmp files of writes a crash cut short.
  std::optional<Round> loadNewest(PeerId id, const std::function<void(ByteReader&)>& load) const;
  // After loadNewest accepted a file: the newer files it skipped (they did not verify, or are another node's
  // or another configuration's) are renamed ckpt-<R>.gsc.unusable, with one line each. Nothing is deleted,
  // and rotation, which counts only ckpt-<R>.gsc files, can no longer remove a checkpoint that verifies
  // while it keeps one that does not (issue 28: a corrupt newest file was kept while the valid ones
  // behind it were rotated away as the resumed run wrote its own). Node thread, before the writer starts.
  void setAsideSkipped();

  // The head of a run-state body (tag, node id, the round it continues at), read from `r`: what
  // loadNewest checks before the node's state, and what `gossipd inspect` shows. DecodeError when the body
  // is not a gossipd run state.
  struct RunHead {
    PeerId node = 0;
    Round next = 0;
  };
  static RunHead readRunHead(ByteReader& r);

  // Writes ckpt-<next>.gsc atomically and durably, then removes all but the newest `keep`.
  void write(Round next, std::span<const std::byte> body) const;
  // The same in two halves: begin() creates ckpt-<next>.gsc's temp file, to be filled (a ByteSink) and
  // finished by the caller; commit() makes it durable under its name and rotates.
  std::unique_ptr<engine::CheckpointFile> begin(Round next) const;
  void commit(engine::CheckpointFile& file) const;
  // Whether a file name in the directory is the temp file of a checkpoint write (cut short by a crash
  // when no write is in flight): ckpt-<round>.gsc.tmp or ckpt-<round>.gsc.<n>.tmp.
  static bool isCutShortWrite(std::string_view name);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::size_t keep_;
  logging::Logger log_;
  // The last loadNewest's files newer than the one it accepted (node thread only; loadNewest is const).
  mutable std::vector<std::filesystem::path> skipped_;
  mutable std::mutex strayMutex_;          // guards strayLogged_ (list() may run on either thread)
  mutable std::set<std::string> strayLogged_;
};

// The body of a run-state checkpoint in memory; `save` writes the node's state (algo::Node::save). The
// daemon streams it instead (streamCheckpoint); tests and tools compare against this.
Bytes runStateBody(PeerId id, Round next, const std::function<void(ByteWriter&)>& save);
// The same body written to `w` (a streaming writer sends it to its file as it goes).
void writeRunState(ByteWriter& w, PeerId id, Round next, const std::function<void(ByteWriter&)>& save);

// One checkpoint, written on the node thread to temp files: what the worker commits.
struct CheckpointJob {
  Round next = 0;
  std::unique_ptr<engine::CheckpointFile> state;  // ckpt-<next>.gsc, finished
  std::unique_ptr<engine::AtomicFile> model;      // model.npy (model_out.h, beginModel)
  nlohmann::json meta;                            // model.json (daemon/node/model_meta.h)
};

// The node thread's half: the run state (as runStateBody) streamed to ckpt-<next>.gsc's temp file in
// pieces of 1 MiB (plus each state vector whole, from where it lies), and x to model.npy's. IoError on a
// failed write (a full disk), with nothing left behind.
CheckpointJob streamCheckpoint(const CheckpointStore& store, const std::filesystem::path& modelDir, PeerId id,
                               Round next, const std::function<void(ByteWriter&)>& save, std::span<const Real> x,
                               nlohmann::json meta);

class CheckpointWriter {
 public:
  // Model files go to modelDir (data_dir). nowMs stamps each finished write (the node's clock, for
  // gossipd_checkpoint_age_seconds); it is called on the worker.
  CheckpointWriter(const CheckpointStore& store, std::filesystem::path modelDir, Background& background,
                   std::function<std::uint64_t()> nowMs, logging::Logger log);
  ~CheckpointWriter();  // drains the Background: a queued write finishes before the writer goes

  void submit(CheckpointJob job);
  // Returns once every submitted checkpoint is on disk (or failed); then rethrows a failure.
  void drain();
  // An error of a write on the worker (IoError: disk full, ...), rethrown on the node thread once.
  void rethrowFailure();

  struct Written {
    Round round = 0;                     // the round the newest written checkpoint continues at (0: none)
    std::optional<std::uint64_t> atMs;   // when it was written (nowMs); none before this process wrote one
  };
  Written written() const;

 private:
  void write(CheckpointJob& job);

  const CheckpointStore& store_;
  std::filesystem::path modelDir_;
  Background& background_;
  std::function<std::uint64_t()> nowMs_;
  logging::Logger log_;
  mutable std::mutex mutex_;  // guards written_ and failure_
  Written written_;
  std::exception_ptr failure_;
  LatestOnly<CheckpointJob> queue_;  // last: its tasks use the fields above
};

}  // namespace gossip::daemon
