#include <cstdio>
#include <exception>

#include "core/error.h"
#include "engine/frame.h"
#include "fuzz/engine_rig.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/targets.h"

namespace gossip::fuzz {

namespace {
// A header from fuzzed fields, sealed with valid checksums, so inputs get past the CRCs into the
// protocol (edge agreement and set-up, acks, state chunks, model payloads) instead of stopping at bad_header_crc.
void sealed(Input& in, Bytes& header, Bytes& payload) {
  engine::FrameHeader h;
  h.kind = static_cast<engine::FrameKind>(1 + in.get<std::uint8_t>() % 11);  // every kind, EdgeAsk and EdgePart too
  const auto who = in.get<std::uint8_t>();
  h.sender = who % 4;  // mostly the real neighbour (1) or self (0): ids the engine knows
  h.incarnation = (who >> 2) % 3;
  h.round = in.get<std::uint8_t>() % 16;
  if (in.get<std::uint8_t>() == 0xff) h.round = in.get<std::uint64_t>();  // far past or future
  h.degree = in.get<std::uint8_t>() % 4;
  h.epoch = in.get<std::uint8_t>() % 4;
  h.seq = in.get<std::uint8_t>();
  payload = in.bytes(in.get<std::uint16_t>() % 1024);
  engine::sealPayload(h, payload);
  engine::encodeFrameHeader(h, header);
}
}  // namespace

int engine(const std::uint8_t* data, std::size_t size) {
  Rig rig;
  Input in(data, size);
  try {
    for (int frames = 0; frames < 64 && !in.empty(); ++frames) {
      Bytes header, payload;
      const auto mode = in.get<std::uint8_t>();
      if (mode & 1) {
        sealed(in, header, payload);
      } else {  // raw bytes: whatever a broken or hostile peer puts on the wire
        header = in.bytes(in.get<std::uint8_t>() % 80);
        payload = in.bytes(in.get<std::uint16_t>() % 1024);
      }
      rig.net.deliver(1, 0, std::move(header), std::make_shared<const Bytes>(std::move(payload)), false);
      // Both nodes go on with the protocol (retransmits, acks, rounds) between hostile frames.
      for (int s = 0; s < (mode >> 1) % 4 + 1; ++s) {
        rig.step(0);
        rig.step(1);
        rig.now += 3;
      }
    }
  } catch (const DivergedError&) {
    // A well-formed message from the real neighbour may carry huge finite values: training on it diverges,
    // which the daemon reports as such (exit 2). Authenticating peers is CurveZMQ's job, not the decoder's.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine: %s\n", e.what());
    fail("engine", "an exception escaped the engine on hostile frames");
  }
  return 0;
}

}  // namespace gossip::fuzz
