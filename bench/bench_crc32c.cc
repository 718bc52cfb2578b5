// The frame payload checksum (core/crc32c.h) against a memcpy of the same bytes: the three-stream hardware
// path over a whole payload, and one crc32 chain (the same function fed pieces shorter than a three-stream
// chunk). And D-PSGD fp32's encode (compressors/cast.h, fp32EncodeChecked: copy, checksum and finiteness
// check in one pass) against the three passes it replaced (memcpy, crc32c, a finiteness pass), and the
// receiver's check of a frame (engine/frame.h, checkPayloadPartsScan: checksum and finiteness in one pass)
// against its two passes. Best of
// --reps runs each. Writes one JSON object.
//   bench_crc32c [--mb 80] [--reps 7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compressors/cast.h"
#include "compressors/compressor.h"
#include "core/crc32c.h"
#include "core/float_words.h"

namespace {

template <class F>
double bestMs(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile auto sink = f();
    (void)sink;
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mb = 80;
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--mb") mb = std::stoul(argv[i + 1]);
    else if (a == "--reps") reps = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_crc32c: unknown option %s (--mb N, --reps N)\n", a.c_str());
      return 2;
    }
  }
  std::vector<std::byte> buf(mb << 20), copy(buf.size());
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = std::byte(static_cast<unsigned char>((i * 2654435761u) >> 13));
  const std::span<const std::byte> s(buf);
  const double three = bestMs(reps, [&] { return gossip::crc32c(s); });
  const double one = bestMs(reps, [&] {
    const std::size_t step = 3 * gossip::crc32c_detail::kStream - 8;  // below a chunk: one chain
    std::uint32_t c = 0;
    for (std::size_t o = 0; o < s.size(); o += step) c = gossip::crc32cUpdate(c, s.subspan(o, std::min(step, s.size() - o)));
    return c;
  });
  const double mem = bestMs(reps, [&] {
    std::memcpy(copy.data(), buf.data(), buf.size());
    return static_cast<int>(copy[buf.size() / 2]);
  });
  // The encode of a float32 model of the buffer's size: fused, and as the three passes it replaced.
  std::vector<float> x(buf.size() / 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) * 1e-3f - 0.5f;
  gossip::compress::Encoded enc;
  const double fused = bestMs(reps, [&] { return static_cast<int>(gossip::compress::fp32EncodeChecked(x, enc)); });
  const double separate = bestMs(reps, [&] {
    const std::span<std::byte> body = gossip::compress::fp32PayloadBody(enc, x.size());
    std::memcpy(body.data(), x.data(), 4 * x.size());
    const std::uint32_t crc = gossip::crc32c(enc.bytes);
    std::uint32_t bad = 0;
    for (float f : x) {
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      bad |= static_cast<std::uint32_t>((u & 0x7F800000u) == 0x7F800000u);
    }
    return crc ^ bad;
  });
  // The receiver's side, over the encoded frame: its checksum with the scan for non-finite words, and the
  // checksum followed by a finiteness pass over the values.
  const double scanFused = bestMs(reps, [&] {
    std::uint64_t bad = 0;
    const std::uint32_t crc = gossip::crc32cUpdateVisit(0, enc.bytes, [&](std::uint64_t w) { bad |= gossip::nonFiniteFloatPair(w); });
    return crc ^ static_cast<std::uint32_t>(bad);
  });
  const double scanSeparate = bestMs(reps, [&] {
    const std::uint32_t crc = gossip::crc32c(enc.bytes);
    const auto body = std::span<const std::byte>(enc.bytes).subspan(gossip::compress::kCodecHeaderBytes);
    return crc ^ static_cast<std::uint32_t>(gossip::compress::fp32Finite(gossip::compress::Fp32Runs(&body, 1)));
  });
  nlohmann::json out = {{"bytes", buf.size()},
                        {"receive_check_fused_ms", scanFused},
                        {"receive_check_two_passes_ms", scanSeparate},
                        {"fp32_encode_fused_ms", fused},
                        {"fp32_encode_three_passes_ms", separate},
                        {"fp32_encode_fused_in_memcpys", fused / mem},
                        {"hardware", gossip::crc32cHardwareAvailable()},
                        {"crc_three_streams_ms", three},
                        {"crc_one_chain_ms", one},
                        {"memcpy_ms", mem},
                        {"three_streams_in_memcpys", three / mem},
                        {"one_chain_in_memcpys", one / mem}};
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
