// fuzz_seeds OUTDIR: writes the seed corpus of every fuzz target (valid inputs the fuzzer mutates from)
// into OUTDIR/<target>/. The committed fuzz/corpus is this program's output; a ctest checks they agree, so
// a change of a wire or file format cannot leave the fuzzers mutating stale inputs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "core/bytes.h"
#include "core/rng.h"
#include "engine/checkpoint.h"
#include "engine/frame.h"
#include "fuzz/engine_rig.h"
#include "fuzz/targets.h"

namespace fs = std::filesystem;
using namespace gossip;

namespace {

void write(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

template <class T>
void put(Bytes& b, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}

Bytes encodeVector(const compress::Compressor& c, std::size_t dim, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> x(dim);
  for (auto& v : x) v = rng.uniform() * 4 - 2;
  compress::Encoded e;
  c.encode(std::span<const double>(x), rng, e);
  return e.bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUTDIR\n");
    return 2;
  }
  const fs::path out = argv[1];

  // frame: a model frame and an empty control frame, header and payload back to back.
  {
    auto c = compress::makeCompressor({.name = "topk", .ratio = 0.5});
    engine::FrameHeader h;
    h.sender = 1;
    h.round = 3;
    h.degree = 1;
    Bytes payload = encodeVector(*c, 10, 1);
    engine::sealPayload(h, payload);
    Bytes frame;
    engine::encodeFrameHeader(h, frame);
    append(frame, payload);
    write(out / "frame" / "model", frame);
    h.kind = engine::FrameKind::Ack;
    engine::sealPayload(h, Bytes{});
    Bytes ack;
    engine::encodeFrameHeader(h, ack);
    write(out / "frame" / "ack", ack);
  }

  // codecs: byte 0 picks the codec (fuzz/target_codecs.cc's list), byte 1 the dimension - 1, then a
  // valid payload of that codec and dimension.
  {
    const std::vector<compress::CompressorSpec> specs = {
        {.name = "fp32"}, {.name = "fp16"}, {.name = "bf16"}, {.name = "topk", .ratio = 0.25},
        {.name = "randk", .ratio = 0.25, .unbiased = true}, {.name = "sign"}, {.name = "sign", .block = 4},
        {.name = "qsgd", .levels = 4}, {.name = "qsgd", .levels = 16, .block = 8}, {.name = "lead", .bits = 2},
        {.name = "lead", .bits = 4, .block = 8}, {.name = "natural"}, {.name = "dither", .levels = 4},
        {.name = "dither", .levels = 8, .inf_norm = false}, {.name = "topk_natural", .ratio = 0.25},
        {.name = "topk_dither", .ratio = 0.25}, {.name = "cltk", .ratio = 0.25},
        {.name = "lgc", .ratio = 0.25, .block = 8, .codes = 2}};
    for (std::size_t i = 0; i < specs.size(); ++i) {
      auto c = compress::makeCompressor(specs[i]);
      fuzz::installFuzzBasis(*c);
      for (std::size_t dim : {1, 13, 64}) {
        Bytes b{std::byte(i), std::byte(dim - 1)};
        append(b, encodeVector(*c, dim, i * 100 + dim));
        write(out / "codecs" / (std::string(specs[i].name) + "-" + std::to_string(i) + "-" + std::to_string(dim)), b);
      }
    }
  }

  // engine: one sealed record per frame kind from the real neighbour (fuzz/target_engine.cc's format),
  // and a real model frame of the neighbour's next round.
  {
    for (std::uint8_t kind = 0; kind < 11; ++kind) {
      Bytes r;
      put<std::uint8_t>(r, 1);     // sealed, one step after it
      put<std::uint8_t>(r, kind);  // kind - 1
      put<std::uint8_t>(r, 1);     // sender 1, incarnation 0
      put<std::uint8_t>(r, 3);     // round
      put<std::uint8_t>(r, 0);     // not a far round
      put<std::uint8_t>(r, 1);     // degree
      put<std::uint8_t>(r, 0);     // epoch
      put<std::uint8_t>(r, 1);     // seq
      put<std::uint16_t>(r, 0);    // no payload
      write(out / "engine" / ("kind-" + std::to_string(kind + 1)), r);
    }
  }

  // checkpoint: the rig's node 0 saved after its first rounds.
  {
    fuzz::Rig rig;
    auto& e = *rig.engines.at(0);
    Bytes body;
    ByteWriter w(body);
    e.node().save(w);
    write(out / "checkpoint" / "node0", engine::wrapCheckpoint(body));
  }
  std::printf("wrote seeds under %s\n", out.c_str());
  return 0;
}
