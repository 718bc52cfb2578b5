#include "daemon/node/checkpoint_store.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "engine/checkpoint.h"
#include "daemon/node/model_out.h"

namespace gossip::daemon {
namespace fs = std::filesystem;

namespace {
constexpr std::uint32_t kRunStateTag = serial::fourcc("GRUN");
constexpr std::string_view kPrefix = "ckpt-", kSuffix = ".gsc";
}  // namespace

CheckpointStore::CheckpointStore(fs::path dir, std::size_t keep, logging::Logger log)
    : dir_(std::move(dir)), keep_(std::max<std::size_t>(1, keep)), log_(std::move(log)) {}

std::string CheckpointStore::fileName(Round next) {
  return std::string(kPrefix) + std::to_string(next) + std::string(kSuffix);
}

std::optional<Round> CheckpointStore::roundOf(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix))
    return std::nullopt;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size() - kSuffix.size();
  Round r = 0;
  // from_chars: digits only (no sign, no spaces), and an overflow is an error instead of an exception.
  const auto [end, ec] = std::from_chars(first, last, r);
  if (ec != std::errc() || end != last) return std::nullopt;
  return r;
}

std::vector<std::pair<Round, fs::path>> CheckpointStore::list() const {
  std::vector<std::pair<Round, fs::path>> all;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().extension() != kSuffix) continue;
    if (const auto r = roundOf(e.path())) {
      all.emplace_back(*r, e.path());
      continue;
    }
    std::lock_guard lock(strayMutex_);
    if (strayLogged_.insert(e.path().filename().string()).second)
      log_->warn("ignoring {}: not a checkpoint name (ckpt-<round>.gsc)", e.path().string());
  }
  std::sort(all.rbegin(), all.rend());
  return all;
}

CheckpointStore::RunHead CheckpointStore::readRunHead(ByteReader& r) {
  serial::expectTag(r, kRunStateTag, "a gossipd run checkpoint");
  RunHead h;
  h.node = r.get<std::uint32_t>();
  h.next = r.get<std::uint64_t>();
  return h;
}

std::optional<Round> CheckpointStore::loadNewest(PeerId id, const std::function<void(ByteReader&)>& load) const {
  // A write cut by a crash leaves ckpt-R.gsc.tmp, as large as a checkpoint and never read: remove them
  // (only this node writes here, under the data directory's lock).
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".gsc.tmp") && roundOf(fs::path(name.substr(0, name.size() - 4)))) {
      std::error_code ec;
      if (fs::remove(e.path(), ec)) log_->info("removed {}, a checkpoint write cut short", e.path().string());
    }
  }
  const auto files = list();
  std::string newestReason;
  for (const auto& [round, f] : files) {
    try {
      const Bytes body = engine::readCheckpoint(f);
      ByteReader r(body, "checkpoint");
      const auto [savedId, next] = readRunHead(r);
      if (savedId != id) throw DecodeError("it belongs to node " + std::to_string(savedId));
      load(r);
      r.expectEnd();
      return next;
    } catch (const std::exception& e) {
      log_->warn("skipping checkpoint {}: {}", f.string(), e.what());
      if (newestReason.empty()) newestReason = f.filename().string() + ": " + e.what();
    }
  }
  if (files.empty()) return std::nullopt;
  const std::string which = files.size() == 1 ? "the checkpoint" : "any of the " + std::to_string(files.size()) + " checkpoints";
  throw RefusedError("node.data_dir: this node cannot resume " + which + " in '" + dir_.string() +
                    "' with this configuration (newest, " + newestReason +
                    "); restart with the configuration and node.id that wrote them, or move them away to start "
                    "from round 0");
}

void CheckpointStore::write(Round next, std::span<const std::byte> body) const {
  engine::writeCheckpoint(dir_ / fileName(next), body);
  const auto all = list();
  for (std::size_t k = keep_; k < all.size(); ++k) fs::remove(all[k].second);
}

Bytes runStateBody(PeerId id, Round next, const std::function<void(ByteWriter&)>& save, std::size_t reserve) {
  Bytes body;
  body.reserve(reserve);
  ByteWriter w(body);
  serial::putTag(w, kRunStateTag);
  w.put<std::uint32_t>(id);
  w.put<std::uint64_t>(next);
  save(w);
  return body;
}

CheckpointWriter::CheckpointWriter(const CheckpointStore& store, fs::path modelDir, Background& background,
                                   std::function<std::uint64_t()> nowMs, logging::Logger log)
    : store_(store),
      modelDir_(std::move(modelDir)),
      background_(background),
      nowMs_(std::move(nowMs)),
      log_(std::move(log)),
      queue_(background, [this](CheckpointJob& job) { write(job); }) {}

CheckpointWriter::~CheckpointWriter() { background_.drain(); }

void CheckpointWriter::submit(CheckpointJob job) {
  rethrowFailure();
  const Round next = job.next;
  if (queue_.submit(std::move(job)))
    log_->debug("checkpoint for round {} replaces one still waiting for the disk", next);
}

void CheckpointWriter::drain() {
  background_.drain();
  rethrowFailure();
}

void CheckpointWriter::rethrowFailure() {
  std::exception_ptr e;
  {
    std::lock_guard lock(mutex_);
    e = std::exchange(failure_, nullptr);
  }
  if (e) std::rethrow_exception(e);
}

CheckpointWriter::Written CheckpointWriter::written() const {
  std::lock_guard lock(mutex_);
  return written_;
}

// On the Background's worker. An error is kept for the node thread (which ends the run with it, as an
// inline write's error did); later checkpoints are still tried.
void CheckpointWriter::write(CheckpointJob& job) {
  try {
    store_.write(job.next, job.body);
    writeModel(modelDir_, job.model, job.meta);
    const std::uint64_t at = nowMs_();
    std::lock_guard lock(mutex_);
    written_ = {job.next, at};
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::current_exception();
  }
}

}  // namespace gossip::daemon
