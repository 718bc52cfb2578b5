#pragma once
// DataDirLock: one gossipd per node.data_dir (issue 28). Two daemons on one directory overwrote each other's
// incarnation, status.json and model.npy, and the second died later with "internal error: checkpoint:
// cannot rename". The node now takes an exclusive flock(2) on `<data_dir>/lock` before it touches anything
// else there, and holds it for its life; a second daemon is refused at once with one line naming the
// directory and the holder's pid. The kernel releases the lock when the holder exits in any way (kill -9
// included), so a stale file never blocks a restart; the file itself stays, holding the last holder's pid.
//
// Threading: constructed and destroyed on the node's thread; no other member functions.
#include <filesystem>

namespace gossip::daemon {

class DataDirLock {
 public:
  // Throws ConfigError when another process (or another DataDirLock in this one) holds the lock, IoError
  // when the lock file cannot be opened.
  explicit DataDirLock(const std::filesystem::path& dataDir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gossip::daemon
