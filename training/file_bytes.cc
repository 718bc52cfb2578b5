#include "training/file_bytes.h"

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>

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

// Closes the gzFile on every path; the explicit close in readFileBytes reports truncation.
struct GzCloser {
  gzFile f;
  ~GzCloser() {
    if (f != nullptr) gzclose_r(f);
  }
};
}  // namespace

std::vector<unsigned char> readFileBytes(const std::string& path) {
  errno = 0;
  GzCloser file{gzopen(path.c_str(), "rb")};
  if (file.f == nullptr)
    throw DataError(path + ": cannot open: " + (errno != 0 ? std::strerror(errno) : "out of memory"));
  gzbuffer(file.f, 1 << 17);
  std::vector<unsigned char> out;
  constexpr std::size_t kStep = 1 << 20;
  for (;;) {
    const std::size_t have = out.size();
    out.resize(have + kStep);
    const int n = gzread(file.f, out.data() + have, static_cast<unsigned>(kStep));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(file.f, &code);
      throw DataError(path + ": " + (code == Z_ERRNO ? std::string("read error: ") + std::strerror(errno)
                                                     : "corrupt gzip data: " + zlibMessage(path, msg)) +
                      " (after " + std::to_string(have) + " inflated bytes)");
    }
    out.resize(have + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  // gzread stops quietly at a truncated gzip member; gzclose_r then reports Z_BUF_ERROR.
  int code = 0;
  const char* msg = gzerror(file.f, &code);
  const int closed = gzclose_r(file.f);
  file.f = nullptr;
  if (code != Z_OK && code != Z_BUF_ERROR) throw DataError(path + ": corrupt gzip data: " + zlibMessage(path, msg));
  if (code == Z_BUF_ERROR || closed == Z_BUF_ERROR)
    throw DataError(path + ": truncated gzip data (stream ends after " + std::to_string(out.size()) +
                    " inflated bytes)");
  if (closed != Z_OK) throw DataError(path + ": error closing gzip stream");
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
