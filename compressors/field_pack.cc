#include "compressors/field_pack.h"

#include <array>
#include <utility>

#include "core/error.h"

namespace gossip::compress::detail {
namespace {

// One field of a 64-field chunk. I and W are template parameters so the word index and shift are
// constants and the whole chunk unrolls into straight-line code through the fold expressions below.
template <unsigned W, std::size_t I>
inline void packOne(const std::uint32_t* codes, std::uint64_t* words) {
  constexpr std::size_t bit = I * W;
  constexpr std::size_t word = bit / 64;
  constexpr unsigned off = bit % 64;
  constexpr std::uint64_t mask = (std::uint64_t{1} << W) - 1;
  const std::uint64_t v = std::uint64_t{codes[I]} & mask;
  words[word] |= v << off;
  if constexpr (off + W > 64) words[word + 1] |= v >> (64 - off);
}

template <unsigned W, std::size_t I>
inline void unpackOne(const std::uint64_t* words, std::uint32_t* codes) {
  constexpr std::size_t bit = I * W;
  constexpr std::size_t word = bit / 64;
  constexpr unsigned off = bit % 64;
  constexpr std::uint64_t mask = (std::uint64_t{1} << W) - 1;
  std::uint64_t v = words[word] >> off;
  if constexpr (off + W > 64) v |= words[word + 1] << (64 - off);
  codes[I] = static_cast<std::uint32_t>(v & mask);
}

template <unsigned W, std::size_t... I>
void packChunk(const std::uint32_t* codes, std::byte* dst, std::index_sequence<I...>) {
  std::uint64_t words[W] = {};
  (packOne<W, I>(codes, words), ...);
  std::memcpy(dst, words, sizeof words);
}

template <unsigned W, std::size_t... I>
void unpackChunk(const std::byte* src, std::uint32_t* codes, std::index_sequence<I...>) {
  std::uint64_t words[W];
  std::memcpy(words, src, sizeof words);
  (unpackOne<W, I>(words, codes), ...);
}

template <unsigned W>
void pack64(const std::uint32_t* codes, std::byte* dst) {
  packChunk<W>(codes, dst, std::make_index_sequence<kChunk>{});
}

template <unsigned W>
void unpack64(const std::byte* src, std::uint32_t* codes) {
  unpackChunk<W>(src, codes, std::make_index_sequence<kChunk>{});
}

// Tables indexed by width; entry 0 is unused.
template <std::size_t... W>
constexpr std::array<PackFn, sizeof...(W) + 1> packTable(std::index_sequence<W...>) {
  return {nullptr, &pack64<W + 1>...};
}
template <std::size_t... W>
constexpr std::array<UnpackFn, sizeof...(W) + 1> unpackTable(std::index_sequence<W...>) {
  return {nullptr, &unpack64<W + 1>...};
}

constexpr auto kPack = packTable(std::make_index_sequence<kMaxFieldBits>{});
constexpr auto kUnpack = unpackTable(std::make_index_sequence<kMaxFieldBits>{});

}  // namespace

PackFn packFn(unsigned width) {
  GOSSIP_CHECK(width >= 1 && width <= kMaxFieldBits, "field width ", width);
  return kPack[width];
}

UnpackFn unpackFn(unsigned width) {
  GOSSIP_CHECK(width >= 1 && width <= kMaxFieldBits, "field width ", width);
  return kUnpack[width];
}

bool fieldPaddingIsZero(const std::byte* src, std::size_t n, unsigned width) {
  const std::size_t bits = n * width;
  const unsigned used = bits % 64;
  if (used == 0) return true;
  std::uint64_t last;
  std::memcpy(&last, src + (bits / 64) * 8, 8);
  return (last >> used) == 0;
}

}  // namespace gossip::compress::detail
