#pragma once
// Helpers for the training tests: temporary files, a minimal gzip writer (stored deflate blocks, so the
// tests exercise the reader's gzip path without linking zlib themselves) and small random data sets.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "training/dataset.h"

namespace gossip::training::testing {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("gossip_train_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) const {
    std::ofstream(file(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                      static_cast<std::streamsize>(bytes.size()));
    return file(name);
  }
  std::string writeText(const std::string& name, const std::string& text) const {
    return write(name, std::vector<unsigned char>(text.begin(), text.end()));
  }

 private:
  std::filesystem::path path_;
};

inline std::uint32_t crc32(const std::vector<unsigned char>& data) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// RFC 1952 member with RFC 1951 stored (uncompressed) blocks.
inline std::vector<unsigned char> gzipStored(const std::vector<unsigned char>& data) {
  std::vector<unsigned char> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
  std::size_t pos = 0;
  do {
    const std::size_t len = std::min<std::size_t>(65535, data.size() - pos);
    const bool last = pos + len == data.size();
    out.push_back(last ? 1 : 0);
    out.push_back(static_cast<unsigned char>(len & 0xFF));
    out.push_back(static_cast<unsigned char>(len >> 8));
    out.push_back(static_cast<unsigned char>(~len & 0xFF));
    out.push_back(static_cast<unsigned char>((~len >> 8) & 0xFF));
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(pos),
               data.begin() + static_cast<std::ptrdiff_t>(pos + len));
    pos += len;
  } while (pos < data.size());
  const std::uint32_t crc = crc32(data);
  const auto size = static_cast<std::uint32_t>(data.size());
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<unsigned char>(crc >> (8 * k)));
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<unsigned char>(size >> (8 * k)));
  return out;
}

// Gaussian features; labels uniform in 0..classes-1 (classes >= 2) or regression targets (classes 0).
inline Dataset randomDataset(std::size_t n, std::size_t f, int classes, std::uint64_t seed) {
  Rng rng(seed);
  Dataset d;
  d.X.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(f));
  for (Eigen::Index i = 0; i < d.X.size(); ++i) d.X.data()[i] = static_cast<float>(rng.normal());
  d.classes = classes;
  for (std::size_t i = 0; i < n; ++i) {
    if (classes > 0)
      d.y.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));
    else
      d.targets.push_back(rng.normal());
  }
  return d;
}

inline Vec randomVec(std::size_t n, double sd, std::uint64_t seed) {
  Rng rng(seed);
  Vec v(static_cast<Eigen::Index>(n));
  for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = sd * rng.normal();
  return v;
}

}  // namespace gossip::training::testing
