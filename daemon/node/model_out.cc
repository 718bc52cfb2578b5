#include "daemon/node/model_out.h"

#include <cstring>
#include <string>

namespace gossip::daemon {

Bytes npyHeader(std::size_t n) {
  // NumPy format 1.0: magic, version, u16 header length, a Python dict literal padded with spaces and
  // ended by '\n' so that the data starts at a multiple of 64 bytes.
  std::string header = std::string("{'descr': '") + (kRealIsDouble ? "<f8" : "<f4") + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  const std::size_t prefix = 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  Bytes out(prefix + header.size());
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::memcpy(out.data(), magic, 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  std::memcpy(out.data() + 8, &len, 2);  // little-endian host (x86_64, aarch64)
  std::memcpy(out.data() + prefix, header.data(), header.size());
  return out;
}

Bytes npyBytes(std::span<const Real> x) {
  Bytes out = npyHeader(x.size());
  const auto values = std::as_bytes(x);
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

void writeFileAtomic(const std::filesystem::path& path, std::span<const std::byte> bytes, bool durable) {
  engine::writeFileAtomic(path, {bytes}, durable);
}

void writeFileAtomic(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> parts,
                     bool durable) {
  engine::writeFileAtomic(path, parts, durable);
}

std::unique_ptr<engine::AtomicFile> beginModel(const std::filesystem::path& dir, std::span<const Real> x) {
  auto f = std::make_unique<engine::AtomicFile>(dir / "model.npy", /*uniqueTemp=*/true);
  f->write(npyHeader(x.size()));
  f->write(std::as_bytes(x));
  return f;
}

void writeModel(const std::filesystem::path& dir, std::span<const Real> x, const nlohmann::json& meta) {
  beginModel(dir, x)->commit();
  writeMeta(dir, meta);
}

void writeMeta(const std::filesystem::path& dir, const nlohmann::json& meta) {
  const std::string text = meta.dump(1) + "\n";
  writeFileAtomic(dir / "model.json", std::as_bytes(std::span(text)));
}

}  // namespace gossip::daemon
