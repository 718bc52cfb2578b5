// DataDirLock (data_dir_lock.h).
#include "daemon/node/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace gossip::daemon {

namespace {

// The pid the holder wrote, or "unknown" (it may be between its lock and its write).
std::string holderPid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() || s.find_first_not_of("0123456789") != std::string::npos ? "unknown" : s;
}

}  // namespace

DataDirLock::DataDirLock(const std::filesystem::path& dataDir) {
  const auto file = dataDir / "lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("node.data_dir: cannot open '" + file.string() + "': " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = holderPid(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw RefusedError("node.data_dir '" + dataDir.string() + "' is in use by another gossipd (pid " + pid +
                        "); each node needs a data directory of its own");
    throw IoError("node.data_dir: cannot lock '" + file.string() + "': " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // The pid is for the message above only: a failed write leaves the lock held, which is what matters.
  const bool written = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  (void)written;
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace gossip::daemon
