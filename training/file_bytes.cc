#include "training/file_bytes.h"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <algorithm>

#include <zlib.h>

#include "core/error.h"

namespace gossip::training::detail {

namespace {
// zlib prefixes its messages with the path; drop that, our messages already start with it.
std::string zlibMessage(const std::string& path, const char* msg) {
  std::string m = msg != nullptr ? msg : "unknown zlib error";
  if (m.starts_with(path + ": ")) m.erase(0, path.size() + 2);
  return m;
}

}  // namespace

FileStream::FileStream(const std::string& path) : path_(path) {
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw DataError(path + ": cannot open: " + (errno != 0 ? std::strerror(errno) : "out of memory"));
  gzbuffer(f, 1 << 17);
  file_ = f;
}

FileStream::~FileStream() {
  if (file_ != nullptr) gzclose_r(static_cast<gzFile>(file_));
}

std::size_t FileStream::read(void* dst, std::size_t n) {
  auto* f = static_cast<gzFile>(file_);
  std::size_t got = 0;
  while (got < n) {
    const unsigned step = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
    const int r = gzread(f, static_cast<unsigned char*>(dst) + got, step);
    if (r < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw DataError(path_ + ": " + (code == Z_ERRNO ? std::string("read error: ") + std::strerror(errno)
                                                      : "corrupt gzip data: " + zlibMessage(path_, msg)) +
                      " (after " + std::to_string(offset_ + got) + " inflated bytes)");
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  offset_ += got;
  return got;
}

void FileStream::finish() {
  auto* f = static_cast<gzFile>(file_);
  // gzread stops quietly at a truncated gzip member; gzclose_r then reports Z_BUF_ERROR.
  int code = 0;
  const char* msg = gzerror(f, &code);
  const std::string message = zlibMessage(path_, msg);
  const int closed = gzclose_r(f);
  file_ = nullptr;
  if (code != Z_OK && code != Z_BUF_ERROR) throw DataError(path_ + ": corrupt gzip data: " + message);
  if (code == Z_BUF_ERROR || closed == Z_BUF_ERROR)
    throw DataError(path_ + ": truncated gzip data (stream ends after " + std::to_string(offset_) +
                    " inflated bytes)");
  if (closed != Z_OK) throw DataError(path_ + ": error closing gzip stream");
}

std::vector<unsigned char> readFileBytes(const std::string& path) {
  FileStream in(path);
  std::vector<unsigned char> out;
  constexpr std::size_t kStep = 1 << 20;
  for (;;) {
    const std::size_t have = out.size();
    out.resize(have + kStep);
    const std::size_t n = in.read(out.data() + have, kStep);
    out.resize(have + n);
    if (n < kStep) break;
  }
  in.finish();
  return out;
}

bool LineCursor::next(std::string_view& line) {
  if (rest_.empty()) return false;
  const std::size_t nl = rest_.find('\n');
  line = rest_.substr(0, nl);
  rest_ = nl == std::string_view::npos ? std::string_view{} : rest_.substr(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_;
  return true;
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\v\f";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::optional<double> parseDouble(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return std::nullopt;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parseUnsigned(std::string_view s) {
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace gossip::training::detail
