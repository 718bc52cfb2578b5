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
  // A write cut by a crash leaves a temp file as large as a checkpoint and never read: remove them
  // (only this node writes here, under the data directory's lock, and it writes nothing before this).
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (isCutShortWrite(name)) {
      std::error_code ec;
      if (fs::remove(e.path(), ec)) log_->info("removed {}, a checkpoint write cut short", e.path().string());
    }
  }
  const auto files = list();
  std::string newestReason;
  skipped_.clear();
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
      skipped_.push_back(f);
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
  const auto file = begin(next);
  file->write(body);
  file->finish();
  commit(*file);
}

std::unique_ptr<engine::CheckpointFile> CheckpointStore::begin(Round next) const {
  return std::make_unique<engine::CheckpointFile>(dir_ / fileName(next));
}

void CheckpointStore::commit(engine::CheckpointFile& file) const {
  file.commit();
  const auto all = list();
  for (std::size_t k = keep_; k < all.size(); ++k) fs::remove(all[k].second);
}

void CheckpointStore::setAsideSkipped() {
  for (const auto& f : skipped_) {
    auto to = f;
    to += ".unusable";
    std::error_code ec;
    fs::rename(f, to, ec);
    if (ec) throw IoError("checkpoint: cannot rename '" + f.string() + "' to '" + to.string() + "': " + ec.message());
    log_->warn("moved {} aside to {}: this node cannot resume it, and rotation must not keep it in place of the "
               "checkpoints that verify",
               f.string(), to.filename().string());
  }
  skipped_.clear();
}

bool CheckpointStore::isCutShortWrite(std::string_view name) {
  // The checkpoint's own name is what precedes ".tmp" or ".<n>.tmp".
  if (!name.ends_with(".tmp")) return false;
  std::string_view base = name.substr(0, name.size() - 4);
  if (!base.ends_with(".gsc")) {
    const auto dot = base.rfind('.');
    if (dot == std::string_view::npos) return false;
    base = base.substr(0, dot);
  }
  return roundOf(fs::path(std::string(base))) && engine::AtomicFile::isTempOf(name, base);
}

void writeRunState(ByteWriter& w, PeerId id, Round next, const std::function<void(ByteWriter&)>& save) {
  serial::putTag(w, kRunStateTag);
  w.put<std::uint32_t>(id);
  w.put<std::uint64_t>(next);
  save(w);
}

Bytes runStateBody(PeerId id, Round next, const std::function<void(ByteWriter&)>& save) {
  Bytes body;
  ByteWriter w(body);
  writeRunState(w, id, next, save);
  return body;
}

CheckpointJob streamCheckpoint(const CheckpointStore& store, const fs::path& modelDir, PeerId id, Round next,
                               const std::function<void(ByteWriter&)>& save, std::span<const Real> x,
                               nlohmann::json meta) {
  CheckpointJob job;
  job.next = next;
  job.state = store.begin(next);
  {
    Bytes buffer;
    ByteWriter w(buffer, *job.state);
    writeRunState(w, id, next, save);
    w.flush();
  }
  job.state->finish();
  job.model = beginModel(modelDir, x);
  job.meta = std::move(meta);
  return job;
}

CheckpointWriter::CheckpointWriter(const CheckpointStore& store, fs::path modelDir, Background& background,
                                   std::function<std::uint64_t()> nowMs, logging::Logger log)
    : store_(store),
      modelDir_(std::move(modelDir)),
      background_(background),
      nowMs_(std::move(nowMs)),
      log_(std::move(log)),
      queue_(background, [this](CheckpointJob& job) { write(job); }) {
  // model.npy's temp files of writes a crash cut short (each as large as the model; nothing else writes
  // model.npy, and this node holds the data directory's lock).
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(modelDir_, ec)) {
    const std::string name = e.path().filename().string();
    if (engine::AtomicFile::isTempOf(name, "model.npy") && fs::remove(e.path(), ec))
      log_->info("removed {}, a model write cut short", e.path().string());
  }
}

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
    store_.commit(*job.state);
    job.model->commit();
    writeMeta(modelDir_, job.meta);
    const std::uint64_t at = nowMs_();
    std::lock_guard lock(mutex_);
    written_ = {job.next, at};
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::current_exception();
  }
}

}  // namespace gossip::daemon
