#pragma once
// Checked (de)serialization of state on top of ByteWriter/ByteReader (core/bytes.h): counts are written
// as u64 and every count is checked against the bytes that remain BEFORE anything is allocated, so a
// corrupt or hostile length can never make a reader allocate more than the input could hold.
// Used by checkpoints (algorithm, estimator and round-engine state) and by control frames.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"

namespace gossip::serial {

// Reads a u64 element count and checks that count * elemBytes more bytes are present.
inline std::size_t getCount(ByteReader& r, std::size_t elemBytes) {
  const auto n = r.get<std::uint64_t>();
  if (elemBytes != 0 && n > r.remaining() / elemBytes)
    throw DecodeError("length " + std::to_string(n) + " exceeds the " + std::to_string(r.remaining()) +
                      " bytes that remain");
  return static_cast<std::size_t>(n);
}

template <class T>
  requires std::is_trivially_copyable_v<T>
void putArray(ByteWriter& w, std::span<const T> v) {
  w.put<std::uint64_t>(v.size());
  w.append(std::as_bytes(v));
}

template <class T>
  requires std::is_trivially_copyable_v<T>
std::vector<T> getArray(ByteReader& r) {
  const std::size_t n = getCount(r, sizeof(T));
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), r.take(n * sizeof(T)).data(), n * sizeof(T));
  return v;
}

// Reads an array whose length must equal out.size() exactly (a state vector of known dimension).
template <class T>
  requires std::is_trivially_copyable_v<T>
void getArrayInto(ByteReader& r, std::span<T> out, const char* what) {
  const std::size_t n = getCount(r, sizeof(T));
  if (n != out.size())
    throw DecodeError(std::string(what) + ": length " + std::to_string(n) + ", expected " +
                      std::to_string(out.size()));
  if (n) std::memcpy(out.data(), r.take(n * sizeof(T)).data(), n * sizeof(T));
}

inline void putString(ByteWriter& w, std::string_view s) {
  putArray(w, std::span<const char>(s.data(), s.size()));
}
inline std::string getString(ByteReader& r) {
  const auto v = getArray<char>(r);
  return {v.begin(), v.end()};
}

// A section tag: a u32 written before each component's state so that a reader of the wrong component
// (or of a file from another algorithm) fails with a clear message instead of misreading numbers.
inline void putTag(ByteWriter& w, std::uint32_t tag) { w.put(tag); }
inline void expectTag(ByteReader& r, std::uint32_t tag, const char* what) {
  if (r.get<std::uint32_t>() != tag) throw DecodeError(std::string("state does not hold ") + what + " here");
}

// Four ASCII characters as a tag, e.g. fourcc("DPSG").
constexpr std::uint32_t fourcc(const char (&s)[5]) {
  return std::uint32_t(std::uint8_t(s[0])) | std::uint32_t(std::uint8_t(s[1])) << 8 |
         std::uint32_t(std::uint8_t(s[2])) << 16 | std::uint32_t(std::uint8_t(s[3])) << 24;
}

}  // namespace gossip::serial
