// daemon/node/data_dir_lock.h: one holder per directory; the refusal names the directory and the holder's
// pid; the lock goes with its holder. flock(2) locks belong to an open file description, so two locks taken
// in one process exclude each other as two daemons' do.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "daemon/node/data_dir_lock.h"

using namespace gossip;
using namespace gossip::daemon;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gossipd-lock-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("data_dir lock: a second holder is refused with the directory and the pid - free again once released") {
  TempDir d;
  std::optional<DataDirLock> first;
  first.emplace(d.path);
  std::ifstream pidFile(d.path / "lock");
  long pid = 0;
  pidFile >> pid;
  CHECK(pid == ::getpid());
  try {
    DataDirLock second(d.path);
    FAIL("a second lock on " << d.path << " was granted");
  } catch (const RefusedError& e) {
    CHECK(std::string(e.what()) == "node.data_dir '" + d.path.string() + "' is in use by another gossipd (pid " +
                                       std::to_string(::getpid()) + "); each node needs a data directory of its own");
  }
  first.reset();  // the holder goes (as a daemon's exit would): the file stays, the lock does not
  CHECK(fs::exists(d.path / "lock"));
  CHECK_NOTHROW(DataDirLock(d.path));
}

TEST_CASE("data_dir lock: a directory that cannot hold the lock file is an IoError naming it") {
  CHECK_THROWS_WITH_AS(DataDirLock("/nonexistent-gossipd-dir"),
                       doctest::Contains("node.data_dir: cannot open '/nonexistent-gossipd-dir/lock'"), IoError);
}
