#include <cmath>
#include <cstring>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/lgc.h"
#include "core/error.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/targets.h"

namespace gossip::fuzz {

void installFuzzBasis(compress::Compressor& c) {
  if (auto* lgc = compress::lgcControl(c)) {
    std::vector<float> cols(16, 0.0f);
    cols[0] = cols[9] = 1.0f;
    lgc->setBasis(compress::LgcBasis(8, 2, std::move(cols)));
  }
}

namespace {
// Every codec with parameters that shape its wire format (block, bits, levels); the first input byte
// picks one, the second the receiver's dimension.
std::vector<std::unique_ptr<compress::Compressor>> makeAll() {
  std::vector<compress::CompressorSpec> specs = {
      {.name = "fp32"},  {.name = "fp16"},   {.name = "bf16"},
      {.name = "topk", .ratio = 0.25},       {.name = "randk", .ratio = 0.25, .unbiased = true},
      {.name = "sign"},  {.name = "sign", .block = 4},
      {.name = "qsgd", .levels = 4},         {.name = "qsgd", .levels = 16, .block = 8},
      {.name = "lead", .bits = 2},           {.name = "lead", .bits = 4, .block = 8},
      {.name = "natural"},                   {.name = "dither", .levels = 4},
      {.name = "dither", .levels = 8, .inf_norm = false},
      {.name = "topk_natural", .ratio = 0.25}, {.name = "topk_dither", .ratio = 0.25},
      {.name = "cltk", .ratio = 0.25},        {.name = "lgc", .ratio = 0.25, .block = 8, .codes = 2}};
  std::vector<std::unique_ptr<compress::Compressor>> out;
  for (const auto& s : specs) {
    out.push_back(compress::makeCompressor(s));
    installFuzzBasis(*out.back());
  }
  return out;
}
}  // namespace

int codecs(const std::uint8_t* data, std::size_t size) {
  static const auto all = makeAll();
  Input in(data, size);
  const auto& c = *all[in.get<std::uint8_t>() % all.size()];
  const std::size_t dim = 1 + in.get<std::uint8_t>() % 64;
  const Bytes payload = in.rest();
  std::vector<double> acc(dim), before(dim);
  for (std::size_t i = 0; i < dim; ++i) acc[i] = before[i] = 0.5 + static_cast<double>(i);
  try {
    c.decodeAdd(payload, acc, 0.75);
    // Accepted values are finite (non-finite ones are part of what decoders reject).
    for (double v : acc)
      if (!std::isfinite(v)) fail("codecs", "decodeAdd accepted a payload that decodes to a non-finite value");
  } catch (const DecodeError&) {
    // The contract (core/error.h): a decoder validates everything before it writes, so a rejected payload
    // leaves the accumulator as it was (the engine then mixes without that message).
    for (std::size_t i = 0; i < dim; ++i)
      if (std::memcmp(&acc[i], &before[i], sizeof(double)) != 0) fail("codecs", "decodeAdd wrote before it rejected");
  }
  return 0;
}

}  // namespace gossip::fuzz
