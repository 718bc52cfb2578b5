#include "daemon/node/model_out.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "core/error.h"

namespace gossip::daemon {
namespace {

[[noreturn]] void fail(const std::filesystem::path& p, const char* what) {
  throw IoError(std::string("cannot ") + what + " '" + p.string() + "': " + std::strerror(errno));
}

}  // namespace

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
  writeFileAtomic(path, {bytes}, durable);
}

void writeFileAtomic(const std::filesystem::path& path, std::initializer_list<std::span<const std::byte>> parts,
                     bool durable) {
  auto tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, "create");
  for (const auto bytes : parts) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        fail(tmp, "write");
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (durable && ::fsync(fd) != 0) {
    ::close(fd);
    fail(tmp, "fsync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(path, "rename onto");
  if (!durable) return;
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail(dir, "open directory");
  ::fsync(dfd);
  ::close(dfd);
}

void writeModel(const std::filesystem::path& dir, std::span<const Real> x, const nlohmann::json& meta) {
  const Bytes header = npyHeader(x.size());
  writeFileAtomic(dir / "model.npy", {std::span<const std::byte>(header), std::as_bytes(x)});
  const std::string text = meta.dump(1) + "\n";
  writeFileAtomic(dir / "model.json", std::as_bytes(std::span(text)));
}

}  // namespace gossip::daemon
