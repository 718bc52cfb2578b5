// AtomicFile (atomic_file.h): temp file, fsync, rename, fsync of the directory.
#include "engine/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace gossip::engine {
namespace {

[[noreturn]] void fail(const char* what, const std::filesystem::path& p) {
  throw IoError(std::string("cannot ") + what + " '" + p.string() + "': " + std::strerror(errno));
}

std::filesystem::path tempName(const std::filesystem::path& target, bool unique) {
  static std::atomic<std::uint64_t> next{0};
  auto tmp = target;
  if (unique) {
    tmp += ".";
    tmp += std::to_string(next.fetch_add(1));
  }
  tmp += ".tmp";
  return tmp;
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target, bool uniqueTemp)
    : target_(std::move(target)), tmp_(tempName(target_, uniqueTemp)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("create", tmp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

// Appends: every write is a pwrite at the end of what was written (the header's writeAt goes back to 0).
void AtomicFile::write(std::span<const std::byte> bytes) {
  writeAt(bytes_, bytes);
  bytes_ += bytes.size();
}

void AtomicFile::writeAt(std::size_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      fail("write", tmp_);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
    offset += static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit(bool durable) {
  if (durable && ::fsync(fd_) != 0) fail("fsync", tmp_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close", tmp_);
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) fail(("rename " + tmp_.string() + " to").c_str(), target_);
  committed_ = true;
  if (!durable) return;
  // The rename is durable only once the directory entry is.
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("open directory", dir);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) fail("fsync directory", dir);
}

bool AtomicFile::isTempOf(std::string_view name, std::string_view targetName) {
  if (!name.starts_with(targetName) || !name.ends_with(".tmp")) return false;
  std::string_view mid = name.substr(targetName.size(), name.size() - targetName.size() - 4);
  if (mid.empty()) return true;  // "<target>.tmp"
  if (mid.size() < 2 || mid[0] != '.') return false;
  mid.remove_prefix(1);
  for (char c : mid)
    if (c < '0' || c > '9') return false;
  return true;
}

void writeFileAtomic(const std::filesystem::path& target, std::initializer_list<std::span<const std::byte>> parts,
                     bool durable) {
  AtomicFile f(target);
  for (const auto part : parts) f.write(part);
  f.commit(durable);
}

}  // namespace gossip::engine
