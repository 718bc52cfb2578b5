#include "daemon/bridge/shared_memory.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace gossip::daemon {

SharedMemory::SharedMemory(std::string name, std::size_t bytes) : name_(std::move(name)), bytes_(bytes) {
  const int fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw IoError("trainer bridge: cannot create shared memory '" + name_ + "': " + std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(name_.c_str());
    throw IoError("trainer bridge: cannot size shared memory '" + name_ + "' to " + std::to_string(bytes_) +
                  " bytes: " + std::strerror(err));
  }
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name_.c_str());
    throw IoError("trainer bridge: cannot map shared memory '" + name_ + "': " + std::strerror(err));
  }
  data_ = static_cast<std::byte*>(p);
}

SharedMemory::~SharedMemory() {
  munmap(data_, bytes_);
  shm_unlink(name_.c_str());
}

void removeStaleSharedMemory(PeerId node) {
  const std::string prefix = "gossipd-" + std::to_string(getuid()) + "-" + std::to_string(node) + "-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const auto pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) shm_unlink(("/" + name).c_str());
  }
}

}  // namespace gossip::daemon
