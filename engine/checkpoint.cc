#include "engine/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/real.h"

namespace gossip::engine {

namespace {

constexpr char kMagic[8] = {'G', 'S', 'P', 'D', 'C', 'K', 'P', 'T'};
constexpr std::size_t kHeaderCrcOffset = 28;
// flags bit 0: the body's state vectors are float32 (core/real.h). Files of earlier releases, which kept float64
// state, have no flag set, so they read as float64 without a format version change.
constexpr std::uint32_t kFlagFloat32State = 1;
constexpr std::uint32_t kOwnFlags = kRealIsDouble ? 0 : kFlagFloat32State;

struct Header {
  std::uint64_t body_bytes;
  std::uint32_t body_crc;
};

[[noreturn]] void bad(const std::string& name, const std::string& what) {
  throw DataError("checkpoint " + name + ": " + what);
}

// Validates the 32-byte header (magic, version, header checksum, flags). Shared by unwrapCheckpoint and
// readCheckpoint so the file reader can learn the body length before it reads (or allocates) the body.
Header parseHeader(std::span<const std::byte> file, const std::string& name) {
  if (file.size() < kCheckpointHeaderBytes)
    bad(name, "truncated (" + std::to_string(file.size()) + " bytes, the header alone is " +
                  std::to_string(kCheckpointHeaderBytes) + ")");
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) bad(name, "bad magic (not a gossipd checkpoint)");
  ByteReader r(file.first(kCheckpointHeaderBytes), "checkpoint header");
  r.take(sizeof kMagic);
  const auto version = r.get<std::uint32_t>();
  const auto flags = r.get<std::uint32_t>();
  Header h{r.get<std::uint64_t>(), r.get<std::uint32_t>()};
  const auto header_crc = r.get<std::uint32_t>();
  // Version before the checksum: a file from a newer gossipd should say so, not look corrupt.
  if (version != kCheckpointVersion)
    bad(name, "unknown format version " + std::to_string(version) + " (this build reads " +
                  std::to_string(kCheckpointVersion) + ")");
  if (header_crc != crc32c(file.first(kHeaderCrcOffset))) bad(name, "header checksum mismatch");
  if ((flags & ~kFlagFloat32State) != 0) bad(name, "unknown flags " + std::to_string(flags));
  if (flags != kOwnFlags) {
    const char* theirs = (flags & kFlagFloat32State) != 0 ? "float32" : "float64";
    bad(name, std::string("its state is ") + theirs + " and this gossipd keeps " + kRealName +
                  " state (docs/algorithms.md, \"Precision and memory\"): resume it with a " + theirs + " build (cmake -DGOSSIP_STATE_FLOAT64=" +
                  (kRealIsDouble ? "OFF" : "ON") + "), or start this node in a new node.data_dir");
  }
  return h;
}

// The body length field must match what the file holds, before anything that size is allocated.
void checkLength(const Header& h, std::uint64_t have, const std::string& name) {
  if (h.body_bytes != have)
    bad(name, (h.body_bytes > have ? "truncated" : "trailing bytes") + std::string(" (body length ") +
                  std::to_string(h.body_bytes) + ", file holds " + std::to_string(have) + ")");
}

void checkBody(const Header& h, std::span<const std::byte> body, const std::string& name) {
  if (crc32c(body) != h.body_crc) bad(name, "body checksum mismatch");
}

[[noreturn]] void ioFail(const std::string& what, const std::filesystem::path& p) {
  throw IoError("checkpoint: cannot " + what + " " + p.string() + ": " + std::strerror(errno));
}

void writeAll(int fd, std::span<const std::byte> data, const std::filesystem::path& p) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ioFail("write", p);
    }
    data = data.subspan(static_cast<std::size_t>(n));
  }
}

// Reads exactly out.size() bytes; false on a short file.
bool readAll(int fd, std::span<std::byte> out, const std::filesystem::path& p) {
  while (!out.empty()) {
    const ssize_t n = ::read(fd, out.data(), out.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ioFail("read", p);
    }
    if (n == 0) return false;
    out = out.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

// Closes on scope exit so every throw path releases the descriptor.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Bytes encodeHeader(std::span<const std::byte> body) {
  Bytes out;
  ByteWriter w(out);
  std::memcpy(w.reserveTail(sizeof kMagic), kMagic, sizeof kMagic);
  w.put<std::uint32_t>(kCheckpointVersion);
  w.put<std::uint32_t>(kOwnFlags);
  w.put<std::uint64_t>(body.size());
  w.put<std::uint32_t>(crc32c(body));
  w.put<std::uint32_t>(crc32c(out));
  return out;
}

}  // namespace

Bytes wrapCheckpoint(std::span<const std::byte> body) {
  Bytes out = encodeHeader(body);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

Bytes unwrapCheckpoint(std::span<const std::byte> file, const std::string& name) {
  const Header h = parseHeader(file, name);
  const std::size_t have = file.size() - kCheckpointHeaderBytes;
  checkLength(h, have, name);
  const auto body = file.subspan(kCheckpointHeaderBytes);
  checkBody(h, body, name);
  return Bytes(body.begin(), body.end());
}

void writeCheckpoint(const std::filesystem::path& path, std::span<const std::byte> body) {
  auto tmp = path;
  tmp += ".tmp";
  const Bytes header = encodeHeader(body);
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0) ioFail("create", tmp);
    try {
      // Header and body written separately: no copy of a possibly large body.
      writeAll(f.fd, header, tmp);
      writeAll(f.fd, body, tmp);
      if (::fsync(f.fd) != 0) ioFail("fsync", tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    ioFail("rename " + tmp.string() + " to", path);
  }
  // The rename is durable only once the directory entry is.
  auto dir = path.parent_path();
  if (dir.empty()) dir = ".";
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0) ioFail("open directory", dir);
  if (::fsync(d.fd) != 0) ioFail("fsync directory", dir);
}

Bytes readCheckpoint(const std::filesystem::path& path) {
  const std::string name = path.string();
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) ioFail("open", path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) ioFail("stat", path);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  Bytes header(kCheckpointHeaderBytes);
  if (size < kCheckpointHeaderBytes || !readAll(f.fd, header, path))
    bad(name, "truncated (" + std::to_string(size) + " bytes, the header alone is " +
                  std::to_string(kCheckpointHeaderBytes) + ")");
  const Header h = parseHeader(header, name);
  const std::uint64_t have = size - kCheckpointHeaderBytes;
  checkLength(h, have, name);
  Bytes body(static_cast<std::size_t>(h.body_bytes));
  // The file may shrink between fstat and read; a short read is truncation, a longer file is ignored.
  if (!readAll(f.fd, body, path)) bad(name, "truncated while reading");
  checkBody(h, body, name);
  return body;
}

}  // namespace gossip::engine
