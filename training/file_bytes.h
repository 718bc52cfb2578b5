#pragma once
// Low-level input helpers for the data readers: whole-file reads with transparent gzip (zlib detects the
// gzip magic 1f 8b; other files are read as they are), a line cursor that tracks 1-based line numbers for
// "file:line: what" errors, and strict number parsing (no silent partial parses, no NaN/Inf).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gossip::training::detail {

// Whole content of `path`, inflated if it is gzip. DataError on open/read/corrupt or truncated gzip.
std::vector<unsigned char> readFileBytes(const std::string& path);

// Iterates the lines of a text buffer ('\n' or "\r\n" endings).
class LineCursor {
 public:
  explicit LineCursor(std::string_view text) : rest_(text) {}
  // Next line without its terminator; false at the end.
  bool next(std::string_view& line);
  std::size_t lineNumber() const { return line_; }  // of the line last returned

 private:
  std::string_view rest_;
  std::size_t line_ = 0;
};

std::string_view trim(std::string_view s);
// Whole-token parse of a finite double (a leading '+' is accepted); nullopt otherwise.
std::optional<double> parseDouble(std::string_view s);
// Whole-token parse of an unsigned integer; nullopt otherwise.
std::optional<std::uint64_t> parseUnsigned(std::string_view s);

}  // namespace gossip::training::detail
