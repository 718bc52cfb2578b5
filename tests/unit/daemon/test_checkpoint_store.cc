// daemon/node/checkpoint_store.h, evaluation.h and background.h: checkpoint names, a stray *.gsc skipped with one log
// line, rotation, loading the newest file that verifies, and the writer on the inline and the thread
// executor (at most one checkpoint waiting, drain, a write's error back on the caller's thread).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <spdlog/sinks/ostream_sink.h>

#include "core/error.h"
#include "daemon/node/background.h"
#include "daemon/node/checkpoint_store.h"
#include "daemon/node/evaluation.h"
#include "daemon/node/model_out.h"
#include "engine/checkpoint.h"

using namespace gossip;
using namespace gossip::daemon;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("gossipd-ckpt-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path / "checkpoints");
  }
  ~TempDir() { fs::remove_all(path); }
};

// A logger whose lines the test can count.
struct CapturedLog {
  std::ostringstream out;
  logging::Logger log = std::make_shared<spdlog::logger>("node", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  std::size_t count(const std::string& needle) const {
    const std::string s = out.str();
    std::size_t n = 0;
    for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }
};

// A node state of one u64 (what `save` writes and `load` reads back).
Bytes body(PeerId id, Round next, std::uint64_t state) {
  return runStateBody(id, next, [&](ByteWriter& w) { w.put<std::uint64_t>(state); });
}

std::vector<Round> rounds(const CheckpointStore& s) {
  std::vector<Round> out;
  for (const auto& [r, p] : s.list()) out.push_back(r);
  return out;
}

// A checkpoint streamed to its temp files as the node thread does (the state: one u64, next * 10).
CheckpointJob job(const CheckpointStore& store, const fs::path& dir, PeerId id, Round next) {
  const std::vector<Real> x{Real(next), Real(-1)};
  return streamCheckpoint(store, dir, id, next, [&](ByteWriter& w) { w.put<std::uint64_t>(next * 10); }, x,
                          {{"round", next}});
}

// Files in dir whose name ends in ".tmp".
std::vector<std::string> temps(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().ends_with(".tmp")) out.push_back(e.path().filename().string());
  return out;
}

Bytes fileBytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return Bytes(reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size());
}

}  // namespace

TEST_CASE("checkpoint names: ckpt-<decimal round>.gsc and nothing else") {
  CHECK(CheckpointStore::fileName(0) == "ckpt-0.gsc");
  CHECK(CheckpointStore::fileName(1234) == "ckpt-1234.gsc");
  CHECK(CheckpointStore::roundOf("ckpt-1234.gsc") == Round{1234});
  CHECK(CheckpointStore::roundOf("/some/dir/ckpt-7.gsc") == Round{7});
  CHECK(CheckpointStore::roundOf("ckpt-18446744073709551615.gsc") == Round{18446744073709551615ull});
  for (const char* bad : {"ckpt-.gsc", "ckpt-x.gsc", "ckpt-1x.gsc", "ckpt--1.gsc", "ckpt-+1.gsc", "ckpt- 1.gsc",
                          "ckpt-18446744073709551616.gsc", "copy.gsc", "ckpt-3.gsc.tmp", "ckpt-3.gsc~", "CKPT-3.gsc", ".gsc"})
    CHECK_MESSAGE(!CheckpointStore::roundOf(bad), bad);
}

TEST_CASE("listing: newest first - a stray *.gsc is skipped with one log line - other files silently") {
  TempDir d;
  CapturedLog log;
  for (const char* name : {"ckpt-3.gsc", "ckpt-10.gsc", "ckpt-9.gsc", "my copy.gsc", "ckpt-99999999999999999999.gsc",
                           "ckpt-4.gsc.tmp", "notes.txt"})
    std::ofstream(d.path / "checkpoints" / name) << "x";
  CheckpointStore store(d.path / "checkpoints", 3, log.log);
  CHECK(rounds(store) == std::vector<Round>{10, 9, 3});
  CHECK(rounds(store) == std::vector<Round>{10, 9, 3});
  CHECK(log.count("my copy.gsc") == 1);  // listed twice, logged once
  CHECK(log.count("ckpt-99999999999999999999.gsc") == 1);
  CHECK(log.count("ckpt-4.gsc.tmp") == 0);
  CHECK(log.count("notes.txt") == 0);
  CHECK(!store.empty());
}

TEST_CASE("write keeps the newest `keep` files - a stray file is never removed") {
  TempDir d;
  std::ofstream(d.path / "checkpoints" / "mine.gsc") << "x";
  CheckpointStore store(d.path / "checkpoints", 2, logging::nullLogger());
  CHECK(store.empty());
  for (Round r : {5, 10, 15, 20}) store.write(r, body(1, r, r));
  CHECK(rounds(store) == std::vector<Round>{20, 15});
  CHECK(fs::exists(d.path / "checkpoints" / "mine.gsc"));
  CHECK(!fs::exists(d.path / "checkpoints" / "ckpt-20.gsc.tmp"));
}

TEST_CASE("loadNewest: the newest file that verifies and is this node's - the others skipped with a warning") {
  TempDir d;
  CapturedLog log;
  CheckpointStore store(d.path / "checkpoints", 10, log.log);
  std::uint64_t loaded = 0;
  const auto load = [&](ByteReader& r) { loaded = r.get<std::uint64_t>(); };
  CHECK(!store.loadNewest(1, load));  // none yet
  // A write cut short by a crash (ckpt-R.gsc.tmp) is removed when the store is read; other files stay.
  std::ofstream(d.path / "checkpoints" / "ckpt-7.gsc.tmp") << "half";
  std::ofstream(d.path / "checkpoints" / "notes.tmp") << "mine";
  CHECK(!store.loadNewest(1, load));
  CHECK(!fs::exists(d.path / "checkpoints" / "ckpt-7.gsc.tmp"));
  CHECK(fs::exists(d.path / "checkpoints" / "notes.tmp"));

  store.write(10, body(1, 10, 100));
  store.write(20, body(1, 20, 200));
  store.write(30, body(2, 30, 300));  // another node's
  store.write(40, body(1, 40, 400));
  {  // a torn newest file: its checksum fails
    std::fstream f(d.path / "checkpoints" / "ckpt-40.gsc", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(engine::kCheckpointHeaderBytes) + 2);
    f.put('\x7f');
  }
  store.write(50, runStateBody(1, 50, [](ByteWriter& w) { w.put<std::uint64_t>(500); w.put<std::uint8_t>(1); }));  // trailing byte

  CHECK(store.loadNewest(1, load) == Round{20});
  CHECK(loaded == 200);
  CHECK(log.count("skipping checkpoint") == 3);  // 50 (trailing byte), 40 (checksum), 30 (node 2)
  CHECK(log.count("belongs to node 2") == 1);

  loaded = 0;
  CHECK(store.loadNewest(2, load) == Round{30});  // node 2 finds its own
  CHECK(loaded == 300);

  // `load` refusing a state (a node of another size) moves on to the next older file.
  CHECK(store.loadNewest(1, [&](ByteReader& r) {
    loaded = r.get<std::uint64_t>();
    if (loaded == 200) throw DecodeError("wrong size");
  }) == Round{10});
  CHECK(loaded == 100);

  // No file this node can resume (another node.id, another configuration): a refusal naming the directory,
  // the count and the newest file's reason, never a fresh start that would rotate them away.
  CHECK_THROWS_WITH_AS(store.loadNewest(3, load),
                       ("node.data_dir: this node cannot resume any of the 5 checkpoints in '" +
                        (d.path / "checkpoints").string() + "' with this configuration (newest, ckpt-50.gsc: " +
                        "it belongs to node 1); restart with the configuration and node.id that wrote them, or move "
                        "them away to start from round 0").c_str(),
                       RefusedError);
  CHECK(store.list().size() == 5);  // nothing removed
}

TEST_CASE("files newer than the resumed checkpoint that it could not use are set aside - rotation keeps only ones that verify") {
  TempDir d;
  CapturedLog log;
  CheckpointStore store(d.path / "checkpoints", 2, log.log);
  std::uint64_t loaded = 0;
  const auto load = [&](ByteReader& r) { loaded = r.get<std::uint64_t>(); };
  store.write(10, body(1, 10, 100));
  store.write(20, body(1, 20, 200));
  store.write(30, body(2, 30, 300));  // another node's (copied in by hand, say)
  std::ofstream(d.path / "checkpoints" / "ckpt-40.gsc", std::ios::binary) << "torn";  // does not verify
  // (keep = 2 rotated ckpt-10 away when ckpt-30 was written; ckpt-40 came by hand.)
  CHECK(store.loadNewest(1, load) == Round{20});
  CHECK(loaded == 200);
  store.setAsideSkipped();
  CHECK(fs::exists(d.path / "checkpoints" / "ckpt-40.gsc.unusable"));
  CHECK(fs::exists(d.path / "checkpoints" / "ckpt-30.gsc.unusable"));
  CHECK(log.count("moved ") == 2);
  CHECK(rounds(store) == std::vector<Round>{20});
  // The resumed run writes on: rotation keeps its newest two, all of which verify, and the files set aside
  // stay where they are. Before, ckpt-40 and ckpt-30 outranked the new files and ckpt-20 went first.
  store.write(21, body(1, 21, 210));
  store.write(22, body(1, 22, 220));
  CHECK(rounds(store) == std::vector<Round>{22, 21});
  CHECK(fs::exists(d.path / "checkpoints" / "ckpt-40.gsc.unusable"));
  CHECK(store.loadNewest(1, load) == Round{22});
  // Nothing skipped this time: nothing to move.
  store.setAsideSkipped();
  CHECK(log.count("moved ") == 2);
}

TEST_CASE("the writer on the inline executor: written at once - model files beside - status of what is on disk") {
  TempDir d;
  InlineBackground inline_;
  CheckpointStore store(d.path / "checkpoints", 2, logging::nullLogger());
  std::uint64_t clock = 1000;
  CheckpointWriter w(store, d.path, inline_, [&] { return clock; }, logging::nullLogger());
  CHECK(w.written().round == 0);
  CHECK(!w.written().atMs);
  w.submit(job(store, d.path, 1, 5));
  CHECK(w.written().round == 5);
  CHECK(w.written().atMs == std::uint64_t{1000});
  CHECK(fs::exists(d.path / "model.npy"));
  CHECK(fs::exists(d.path / "model.json"));
  clock = 2000;
  w.submit(job(store, d.path, 1, 10));
  w.submit(job(store, d.path, 1, 15));
  CHECK(rounds(store) == std::vector<Round>{15, 10});
  CHECK(w.written().round == 15);
  CHECK(w.written().atMs == std::uint64_t{2000});
  std::uint64_t loaded = 0;
  CHECK(store.loadNewest(1, [&](ByteReader& r) { loaded = r.get<std::uint64_t>(); }) == Round{15});
  CHECK(loaded == 150);
}

namespace {
// Holds whoever calls pass() until release(); the test waits until someone is held, with a deadline (no
// sleeps, and a hang fails instead of blocking).
class Gate {
 public:
  void pass() {
    std::unique_lock lock(mutex_);
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --held_;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool waitHeld() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [this] { return held_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int held_ = 0;
};
}  // namespace

TEST_CASE("the writer on a worker thread: one write running - one waiting - a newer one replaces it - drain") {
  TempDir d;
  Gate gate;
  ThreadBackground worker;
  CheckpointStore store(d.path / "checkpoints", 10, logging::nullLogger());
  // The clock is read once a write is on disk, before it is reported: the gate holds the worker there.
  CheckpointWriter w(store, d.path, worker, [&] { gate.pass(); return std::uint64_t{7}; }, logging::nullLogger());
  struct Release {  // destroyed before w, whose destructor drains: a failed REQUIRE must not hang
    Gate& g;
    ~Release() { g.release(); }
  } release{gate};
  w.submit(job(store, d.path, 1, 1));
  REQUIRE(gate.waitHeld());  // the worker is inside round 1's write
  w.submit(job(store, d.path, 1, 2));       // waits
  w.submit(job(store, d.path, 1, 3));       // replaces 2
  w.submit(job(store, d.path, 1, 4));       // replaces 3
  CHECK(w.written().round == 0);  // round 1 is not reported before its write is done
  gate.release();
  w.drain();
  CHECK(rounds(store) == std::vector<Round>{4, 1});  // 2 and 3 were never committed...
  CHECK(temps(d.path / "checkpoints").empty());        // ...and their streamed files are gone
  CHECK(temps(d.path).empty());
  CHECK(w.written().round == 4);
  CHECK(w.written().atMs == std::uint64_t{7});
}

TEST_CASE("a write's error comes back on the node thread - once") {
  TempDir d;
  ThreadBackground worker;
  CheckpointStore store(d.path / "checkpoints", 2, logging::nullLogger());
  CheckpointWriter w(store, d.path, worker, [] { return std::uint64_t{0}; }, logging::nullLogger());
  // Streamed, then the directory is gone: the commit's rename fails on the worker.
  CheckpointJob first = job(store, d.path, 1, 1);
  fs::remove_all(d.path / "checkpoints");
  w.submit(std::move(first));
  CHECK_THROWS_AS(w.drain(), IoError);
  CHECK_NOTHROW(w.drain());  // reported once
  CHECK(w.written().round == 0);
  fs::create_directories(d.path / "checkpoints");
  w.submit(job(store, d.path, 1, 2));
  CHECK_NOTHROW(w.drain());
  CHECK(w.written().round == 2);
}

TEST_CASE("a streamed checkpoint is the bytes of the one written whole - model.npy too - a failed stream leaves nothing") {
  TempDir d;
  CheckpointStore store(d.path / "checkpoints", 5, logging::nullLogger());
  // A state of three vectors around the writer's 1 MiB pieces: one below, one above, one of exactly 1 MiB.
  std::vector<std::vector<Real>> state;
  for (std::size_t n : {std::size_t{1000}, std::size_t{700000}, (std::size_t{1} << 20) / sizeof(Real)}) {
    state.emplace_back(n);
    for (std::size_t i = 0; i < n; ++i) state.back()[i] = static_cast<Real>(0.25 * double(i % 977) - double(n));
  }
  const auto save = [&](ByteWriter& w) {
    w.put<std::uint8_t>(7);
    for (const auto& v : state) serial::putArray(w, std::span<const Real>(v));
    w.put<std::uint32_t>(0xABCD);
  };
  const std::vector<Real>& x = state[1];
  InlineBackground inline_;  // made first, as the node does: it removes model.npy temp files it finds
  CheckpointWriter w(store, d.path, inline_, [] { return std::uint64_t{0}; }, logging::nullLogger());
  CheckpointJob streamed = streamCheckpoint(store, d.path, 3, 42, save, x, {{"round", 42}});
  CHECK(streamed.state->bodyBytes() == runStateBody(3, 42, save).size());
  CHECK(fs::exists(streamed.state->path().parent_path()));
  CHECK(temps(d.path / "checkpoints").size() == 1);  // not under its name before the commit
  CHECK(store.empty());
  w.submit(std::move(streamed));
  CHECK_NOTHROW(w.drain());
  CHECK(fileBytes(d.path / "checkpoints" / "ckpt-42.gsc") == engine::wrapCheckpoint(runStateBody(3, 42, save)));
  CHECK(fileBytes(d.path / "model.npy") == npyBytes(x));
  CHECK(temps(d.path / "checkpoints").empty());
  CHECK(temps(d.path).empty());
  // The directory gone: the stream fails on the caller's thread with an IoError, and leaves no file.
  fs::remove_all(d.path / "checkpoints");
  CHECK_THROWS_AS(streamCheckpoint(store, d.path, 3, 43, save, x, {}), IoError);
  CHECK(temps(d.path).empty());
}

TEST_CASE("temp files of writes a crash cut short are removed at the next start - others stay") {
  TempDir d;
  for (const char* name : {"ckpt-7.gsc.tmp", "ckpt-7.gsc.12.tmp", "ckpt-8.gsc.x.tmp", "notes.tmp"})
    std::ofstream(d.path / "checkpoints" / name) << "half";
  for (const char* name : {"model.npy.tmp", "model.npy.3.tmp", "model.npy.3x.tmp", "mine.npy.tmp"})
    std::ofstream(d.path / name) << "half";
  CHECK(CheckpointStore::isCutShortWrite("ckpt-7.gsc.12.tmp"));
  CHECK(!CheckpointStore::isCutShortWrite("ckpt-7.gsc.12"));
  CHECK(!CheckpointStore::isCutShortWrite("ckpt-x.gsc.12.tmp"));
  CheckpointStore store(d.path / "checkpoints", 2, logging::nullLogger());
  CHECK(!store.loadNewest(1, [](ByteReader&) {}));
  InlineBackground inline_;
  CheckpointWriter w(store, d.path, inline_, [] { return std::uint64_t{0}; }, logging::nullLogger());
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(sorted(temps(d.path / "checkpoints")) == std::vector<std::string>{"ckpt-8.gsc.x.tmp", "notes.tmp"});
  CHECK(sorted(temps(d.path)) == std::vector<std::string>{"mine.npy.tmp", "model.npy.3x.tmp"});
}

TEST_CASE("ThreadBackground: tasks run in order on one other thread - drain waits for all posted") {
  ThreadBackground bg;
  std::vector<int> order;  // written by the worker only, read after drain
  std::atomic<bool> otherThread{true};
  const auto self = std::this_thread::get_id();
  for (int i = 0; i < 100; ++i)
    bg.post([&, i] {
      order.push_back(i);
      if (std::this_thread::get_id() == self) otherThread = false;
    });
  bg.drain();
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  CHECK(otherThread);
  bg.drain();  // nothing posted: returns at once
}

TEST_CASE("LatestOnly on the inline executor runs each job at once") {
  InlineBackground bg;
  std::vector<int> ran;
  LatestOnly<int> q(bg, [&](int& v) { ran.push_back(v); });
  CHECK(!q.submit(1));
  CHECK(!q.submit(2));
  CHECK(ran == std::vector<int>{1, 2});
}

namespace {
// A model whose accuracy is x[0] (a negative one throws) and which records the rounds (x[1]) it was asked
// about; `gate` holds it inside an evaluation when set.
class RecordingModel final : public training::Model {
 public:
  Gate* gate = nullptr;
  mutable std::mutex mutex;
  mutable std::vector<double> asked;
  std::string name() const override { return "recording"; }
  std::size_t dim() const override { return 2; }
  void init(training::Vec& x, Rng&) const override { x = training::Vec::Zero(2); }
  double lossAndGrad(const training::Vec&, const training::Dataset&, std::span<const std::uint32_t>,
                     training::Vec& grad) const override {
    grad = training::Vec::Zero(2);
    return 0;
  }
  double loss(const training::Vec&, const training::Dataset&) const override { return 0; }
  double accuracy(const training::Vec& x, const training::Dataset&) const override {
    {
      std::lock_guard lock(mutex);
      asked.push_back(x[1]);
    }
    if (gate) gate->pass();
    if (x[0] < 0) throw std::runtime_error("evaluation failed at round " + std::to_string(static_cast<int>(x[1])));
    return x[0];
  }
};

training::Vec modelAt(double accuracy, Round round) {
  training::Vec x(2);
  x << accuracy, static_cast<double>(round);
  return x;
}
}  // namespace

TEST_CASE("periodic evaluation: the result comes back with its round - a newer model replaces a waiting one") {
  training::Dataset set;
  set.X = training::FeatureMatrix::Zero(7, 1);
  set.y.assign(7, 0);
  RecordingModel model;
  SUBCASE("inline") {
    InlineBackground bg;
    PeriodicEvaluation e(model, set, bg);
    CHECK(!e.take());
    e.submit(10, modelAt(0.5, 10));
    const auto r = e.take();
    REQUIRE(r);
    CHECK(r->round == 10);
    CHECK(r->accuracy == 0.5);
    CHECK(r->samples == 7);
    CHECK(!e.take());  // taken once
  }
  SUBCASE("worker thread") {
    Gate gate;
    model.gate = &gate;
    ThreadBackground bg;
    struct Release {
      Gate& g;
      ThreadBackground& b;
      ~Release() { g.release(); b.drain(); }  // before the evaluation goes: its tasks point to it
    };
    PeriodicEvaluation e(model, set, bg);
    Release release{gate, bg};
    e.submit(1, modelAt(0.1, 1));
    REQUIRE(gate.waitHeld());  // round 1 is being evaluated
    e.submit(2, modelAt(0.2, 2));
    e.submit(3, modelAt(0.3, 3));  // replaces 2
    CHECK(!e.take());
    gate.release();
    bg.drain();
    const auto r = e.take();
    REQUIRE(r);
    CHECK(r->round == 3);  // the newest; round 1's result was replaced before it was taken
    CHECK(r->accuracy == static_cast<double>(Real(0.3)));  // the model holding it is Real (core/real.h)
    std::lock_guard lock(model.mutex);
    CHECK(model.asked == std::vector<double>{1, 3});  // round 2 was never evaluated
  }
}

TEST_CASE("periodic evaluation: an evaluation that throws on the worker is rethrown by take() on the caller") {
  training::Dataset set;
  set.X = training::FeatureMatrix::Zero(3, 1);
  set.y.assign(3, 0);
  RecordingModel model;
  ThreadBackground bg;
  PeriodicEvaluation e(model, set, bg);
  e.submit(4, modelAt(-1, 4));
  bg.drain();  // the worker is still alive: the exception did not escape it
  CHECK_THROWS_WITH_AS(e.take(), "evaluation failed at round 4", std::runtime_error);
  e.submit(5, modelAt(0.25, 5));  // thrown once; evaluations go on
  bg.drain();
  const auto r = e.take();
  REQUIRE(r);
  CHECK(r->accuracy == 0.25);
}
