#include <array>
#include <string>

#include "compressors/cast.h"
#include "compressors/compressor.h"
#include "compressors/lead_quant.h"
#include "compressors/lgc.h"
#include "compressors/natural.h"
#include "compressors/qsgd.h"
#include "compressors/randk.h"
#include "compressors/shared_support.h"
#include "compressors/sign.h"
#include "compressors/topk.h"
#include "compressors/topk_quant.h"
#include "core/error.h"

namespace gossip::compress {
namespace {
using Maker = std::unique_ptr<Compressor> (*)(const CompressorSpec&);
struct Entry {
  std::string_view name;
  Maker make;
};
constexpr std::array kEntries{
    Entry{"fp32", makeFp32},          Entry{"identity", makeFp32},   Entry{"fp16", makeFp16},
    Entry{"bf16", makeBf16},          Entry{"topk", makeTopK},       Entry{"randk", makeRandK},
    Entry{"sign", makeSign},          Entry{"qsgd", makeQsgd},       Entry{"lead", makeLeadQuant},
    Entry{"natural", makeNatural},    Entry{"dither", makeDither},   Entry{"topk_natural", makeTopKNatural},
    Entry{"topk_dither", makeTopKDither}, Entry{"cltk", makeCltk},         Entry{"lgc", makeLgc},
};
constexpr auto kNames = [] {
  std::array<std::string_view, kEntries.size()> names{};
  for (std::size_t i = 0; i < kEntries.size(); ++i) names[i] = kEntries[i].name;
  return names;
}();
}  // namespace

std::span<const std::string_view> compressorNames() { return kNames; }

std::unique_ptr<Compressor> makeCompressor(const CompressorSpec& spec) {
  for (const auto& e : kEntries)
    if (e.name == spec.name) return e.make(spec);
  std::string all;
  for (auto n : kNames) all += (all.empty() ? "" : ", ") + std::string(n);
  throw ConfigError("compressor.name: unknown compressor '" + spec.name + "' (one of: " + all + ")");
}

}  // namespace gossip::compress
