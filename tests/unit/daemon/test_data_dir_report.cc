// daemon/node/data_dir_report.h (`gossipd inspect`): every checkpoint verified as a restart would, the
// newest valid one named, stray and corrupt files reported, the holder of the lock found, and not a byte of
// the directory changed by looking.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <unistd.h>

#include "core/bytes.h"
#include "core/error.h"
#include "core/serial.h"
#include "daemon/node/data_dir_lock.h"
#include "daemon/node/data_dir_report.h"
#include "engine/checkpoint.h"

using namespace gossip;
using namespace gossip::daemon;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gossipd-report-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path / "checkpoints"); }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& f, const std::string& text) { std::ofstream(f, std::ios::binary) << text; }

// A run-state checkpoint of node `node` continuing at `next` (the head CheckpointStore writes, then some state).
void writeRunCheckpoint(const fs::path& f, std::uint32_t node, std::uint64_t next) {
  Bytes body;
  ByteWriter w(body);
  serial::putTag(w, serial::fourcc("GRUN"));
  w.put(node);
  w.put(next);
  w.put(std::uint64_t{12345});  // stands for the node's state
  engine::writeCheckpoint(f, body);
}

// Every file's bytes, by path: what "read-only" is checked against.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[e.path().string()] = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return out;
}
}  // namespace

TEST_CASE("inspect: the newest checkpoint that verifies - corrupt and stray files named - nothing changed") {
  TempDir d;
  write(d.path / "cluster", "algorithm.name=\"dpsgd\"\ncluster.name=\"lab\"\nnode.id=3\n");
  write(d.path / "instance", "00c0ffee00c0ffee\n");
  write(d.path / "incarnation", "4\n");
  write(d.path / "status.json", R"({"state":"stopped","round":250,"rounds":1000})");
  writeRunCheckpoint(d.path / "checkpoints" / "ckpt-100.gsc", 3, 100);
  writeRunCheckpoint(d.path / "checkpoints" / "ckpt-200.gsc", 3, 200);
  writeRunCheckpoint(d.path / "checkpoints" / "ckpt-300.gsc", 3, 300);
  {  // the newest one's body is damaged: its checksum no longer matches
    std::fstream f(d.path / "checkpoints" / "ckpt-300.gsc", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  write(d.path / "checkpoints" / "my-copy.gsc", "a user's file");
  const auto before = snapshot(d.path);

  const auto r = inspectDataDir(d.path);
  CHECK(snapshot(d.path) == before);
  CHECK(fs::exists(d.path / "checkpoints" / "my-copy.gsc"));
  CHECK(r["cluster"]["node.id"] == 3);
  CHECK(r["cluster"]["cluster.name"] == "lab");
  CHECK(r["instance"] == "00c0ffee00c0ffee");
  CHECK(r["incarnation"] == 4);
  REQUIRE(r["checkpoints"].size() == 3);
  CHECK(r["checkpoints"][0]["file"] == "ckpt-300.gsc");
  CHECK(r["checkpoints"][0]["verifies"] == false);
  CHECK(r["checkpoints"][0]["error"].get<std::string>().find("checksum") != std::string::npos);
  CHECK(r["checkpoints"][1]["verifies"] == true);
  CHECK(r["newest_valid_checkpoint"]["file"] == "ckpt-200.gsc");
  CHECK(r["newest_valid_checkpoint"]["continues_at"] == 200);
  CHECK(r["ignored_files"] == nlohmann::json::array({"my-copy.gsc"}));
  CHECK(r["finished"] == false);
  CHECK(r["in_use_by_pid"].is_null());
  const std::string text = describeDataDir(r);
  CAPTURE(text);
  CHECK(text.find("a restart resumes at round 200 (ckpt-200.gsc)") != std::string::npos);
  CHECK(text.find("ckpt-300.gsc: ") != std::string::npos);
  CHECK(text.find("does not verify") != std::string::npos);

  // A daemon holding the directory is named by its pid; a done status means finished.
  DataDirLock held(d.path);
  write(d.path / "status.json", R"({"state":"done","round":1000,"rounds":1000})");
  const auto busy = inspectDataDir(d.path);
  CHECK(busy["in_use_by_pid"] == ::getpid());
  CHECK(busy["finished"] == true);
  CHECK(describeDataDir(busy).find("the run is finished") != std::string::npos);
}

TEST_CASE("inspect: a directory no node started in is an error naming it") {
  TempDir d;
  fs::remove_all(d.path / "checkpoints");
  CHECK_THROWS_WITH_AS(inspectDataDir(d.path), doctest::Contains("holds none of the files a node writes"), DataError);
  CHECK_THROWS_WITH_AS(inspectDataDir(d.path / "nope"), doctest::Contains("is not a directory"), DataError);
}
