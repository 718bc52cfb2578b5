#pragma once
// The trainer bridge's shared memory (docs/trainer.md): one POSIX shared-memory file per region a trainer
// maps (parameters, gradients), and the sweep of files a killed daemon left behind. Owned by the
// TrainerBridge; used on the node thread only.
#include <cstddef>
#include <string>

#include "core/types.h"

namespace gossip::daemon {

// One POSIX shared-memory file, mapped read-write; unlinked when dropped (a trainer that still maps it
// keeps its pages until it unmaps). IoError, naming the file, when it cannot be created, sized or mapped.
class SharedMemory {
 public:
  SharedMemory(std::string name, std::size_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  std::byte* data() const { return data_; }
  std::string path() const { return "/dev/shm" + name_; }

 private:
  std::string name_;
  std::size_t bytes_;
  std::byte* data_ = nullptr;
};

// A daemon killed with SIGKILL leaves its shared memory behind (/dev/shm/gossipd-UID-NODE-PID-SERIAL):
// removes this node's files whose daemon is no longer running, so that restarts do not pile up model-sized
// files in RAM. A file of a live process (another cluster's node with the same id) is left alone.
void removeStaleSharedMemory(PeerId node);

}  // namespace gossip::daemon
