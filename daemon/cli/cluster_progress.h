#pragma once
// The children of `gossipd cluster` as the supervisor sees them (cmd_cluster.cc), and the one progress line
// it prints for all of them from their status.json files. The supervisor's one thread only.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include "core/types.h"

namespace gossip::cmd {

struct Child {
  PeerId id = 0;
  pid_t pid = -1;
  pid_t trainerPid = -1;               // --trainer: the trainer beside this node
  std::optional<int> trainerStatus;
  std::filesystem::path dir;
  std::optional<int> status;  // waitpid status once exited
  nlohmann::json last;        // last status.json read
  unsigned restarts = 0;      // times the supervisor started it again after it died
  std::optional<std::chrono::steady_clock::time_point> restartAt;  // when it is started again (backoff)
};

// A status.json field, or `fallback` when it is missing, null or of another type.
template <class T>
T field(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

// Reads c.dir/status.json into c.last (keeps the last good one when the file is being replaced).
void readStatus(Child& c);

// "round LO-HI/ROUNDS  loss L  acc A%  alive K/N  sent M MB  [n state, ...]"
std::string progressLine(const std::vector<Child>& children, Round rounds);

}  // namespace gossip::cmd
