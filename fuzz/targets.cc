#include "fuzz/targets.h"

#include <cstdio>
#include <cstdlib>

namespace gossip::fuzz {

Target targetByName(std::string_view name) {
  if (name == "frame") return frame;
  if (name == "codecs") return codecs;
  if (name == "engine") return engine;
  if (name == "checkpoint") return checkpoint;
  if (name == "config") return config;
  return nullptr;
}

void fail(const char* target, const char* what) {
  std::fprintf(stderr, "fuzz target %s: %s\n", target, what);
  std::abort();
}

}  // namespace gossip::fuzz
