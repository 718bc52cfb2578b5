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

// Sequential reads of `path`, inflated if it is gzip, for readers that keep only part of a file
// (readFileBytes is built on it). DataError on open, read and corrupt gzip, naming the path; finish()
// reports a truncated gzip stream, which zlib only tells at the end.
class FileStream {
 public:
  explicit FileStream(const std::string& path);
  ~FileStream();
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;
  // Up to n bytes into dst; fewer only at the end of the data.
  std::size_t read(void* dst, std::size_t n);
  // Bytes delivered so far (inflated).
  std::size_t offset() const { return offset_; }
  // Closes the file; DataError if the gzip stream was truncated or corrupt.
  void finish();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* file_ = nullptr;  // gzFile; zlib.h stays out of this header
  std::size_t offset_ = 0;
};

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
