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

Bytes encodeHeader(std::uint64_t bodyBytes, std::uint32_t bodyCrc) {
  Bytes out;
  ByteWriter w(out);
  std::memcpy(w.reserveTail(sizeof kMagic), kMagic, sizeof kMagic);
  w.put<std::uint32_t>(kCheckpointVersion);
  w.put<std::uint32_t>(kOwnFlags);
  w.put<std::uint64_t>(bodyBytes);
  w.put<std::uint32_t>(bodyCrc);
  w.put<std::uint32_t>(crc32c(out));
  return out;
}
Bytes encodeHeader(std::span<const std::byte> body) { return encodeHeader(body.size(), crc32c(body)); }

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

CheckpointFile::CheckpointFile(std::filesystem::path path) : file_(std::move(path), /*uniqueTemp=*/true) {
  const Bytes placeholder(kCheckpointHeaderBytes);  // zeros: no valid magic until finish()
  file_.write(placeholder);
}

void CheckpointFile::write(std::span<const std::byte> bytes) {
  GOSSIP_CHECK(!finished_, "checkpoint body written after finish");
  crc_ = crc32cUpdate(crc_, bytes);
  bodyBytes_ += bytes.size();
  file_.write(bytes);
}

void CheckpointFile::finish() {
  GOSSIP_CHECK(!finished_, "checkpoint finished twice");
  file_.writeAt(0, encodeHeader(bodyBytes_, crc_));
  finished_ = true;
}

void CheckpointFile::commit() {
  GOSSIP_CHECK(finished_, "checkpoint committed before finish");
  file_.commit(true);
}

void writeCheckpoint(const std::filesystem::path& path, std::span<const std::byte> body) {
  CheckpointFile f(path);
  f.write(body);
  f.finish();
  f.commit();
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
