// libFuzzer entry point; GOSSIP_FUZZ_TARGET names the target function (fuzz/CMakeLists.txt).
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gossip::fuzz::GOSSIP_FUZZ_TARGET(data, size);
}
