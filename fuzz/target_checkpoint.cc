#include <cstdio>
#include <exception>

#include "core/bytes.h"
#include "core/error.h"
#include "engine/checkpoint.h"
#include "fuzz/engine_rig.h"
#include "fuzz/targets.h"

namespace gossip::fuzz {

int checkpoint(const std::uint8_t* data, std::size_t size) {
  static Rig rig;  // only its problem and configuration are used: each input loads into a fresh engine
  engine::InprocTransport t(rig.net, 7);
  auto node = rig.makeEngine(0, 0, t);
  try {
    const Bytes body = engine::unwrapCheckpoint(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz");
    // The node state is what the daemon's and the simulator's checkpoints both hold (algorithm with its
    // edges and replicas, estimator state); the daemon wraps it with its id and round.
    ByteReader r(body, "checkpoint");
    node->node().load(r);
    r.expectEnd();
  } catch (const DataError&) {
  } catch (const DecodeError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint: %s\n", e.what());
    fail("checkpoint", "loading a damaged checkpoint threw neither DataError nor DecodeError");
  }
  return 0;
}

}  // namespace gossip::fuzz
