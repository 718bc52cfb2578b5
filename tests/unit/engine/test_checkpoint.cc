// Checkpoint container: round trip through a file, rejection (DataError) of every truncation and every
// single-bit flip, no allocation driven by a hostile length field, and no .tmp file left behind.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/real.h"
#include "core/rng.h"
#include "engine/checkpoint.h"

using namespace gossip;
using namespace gossip::engine;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("gossip_ckpt_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

Bytes randomBody(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::byte(rng.below(256));
  return b;
}

void writeRaw(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("checkpoint round trip through a file - atomically replaced") {
  TempDir dir;
  const auto path = dir / "node.ckpt";
  for (std::size_t n : {0u, 1u, 100u, 70000u}) {
    const Bytes body = randomBody(n, n + 1);
    writeCheckpoint(path, body);
    CHECK(readCheckpoint(path) == body);
    CHECK(unwrapCheckpoint(wrapCheckpoint(body), "mem") == body);
    CHECK(fs::file_size(path) == kCheckpointHeaderBytes + n);
    CHECK_FALSE(fs::exists(dir / "node.ckpt.tmp"));  // nor any other temp file: the count below
  }
  // Exactly the file and nothing else in the directory.
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  // The file is what wrapCheckpoint produces.
  const Bytes body = randomBody(33, 9);
  writeCheckpoint(path, body);
  std::ifstream in(path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Bytes wrapped = wrapCheckpoint(body);
  REQUIRE(raw.size() == wrapped.size());
  CHECK(std::memcmp(raw.data(), wrapped.data(), raw.size()) == 0);
  CHECK(raw.substr(0, 8) == "GSPDCKPT");
}

TEST_CASE("a checkpoint streamed through a ByteWriter in pieces is the file written whole") {
  TempDir dir;
  const auto path = dir / "streamed.ckpt";
  const Bytes small = randomBody(300, 1), big = randomBody(5000, 2);
  const auto fill = [&](ByteWriter& w) {
    w.put<std::uint32_t>(7);
    w.append(small);                                       // below the flush size: buffered
    w.append(big);                                         // above it: straight to the file
    std::memcpy(w.reserveTail(small.size()), small.data(), small.size());
    for (int i = 0; i < 3000; ++i) w.put<std::uint8_t>(static_cast<std::uint8_t>(i));  // flushes on the way
  };
  Bytes whole;
  ByteWriter ww(whole);
  fill(ww);
  {
    CheckpointFile f(path);
    Bytes buffer;
    ByteWriter w(buffer, f, 1024);
    fill(w);
    w.flush();
    CHECK(w.size() == whole.size());
    CHECK(f.bodyBytes() == whole.size());
    CHECK_FALSE(fs::exists(path));  // not under its name before the commit
    f.finish();
    f.commit();
  }
  CHECK(readCheckpoint(path) == whole);
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  {  // destroyed before its commit: nothing is left, the old file stays
    CheckpointFile f(path);
    f.write(small);
    f.finish();
  }
  CHECK(readCheckpoint(path) == whole);
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  CHECK(AtomicFile::isTempOf("streamed.ckpt.12.tmp", "streamed.ckpt"));
  CHECK(AtomicFile::isTempOf("streamed.ckpt.tmp", "streamed.ckpt"));
  CHECK_FALSE(AtomicFile::isTempOf("streamed.ckpt.1a.tmp", "streamed.ckpt"));
  CHECK_FALSE(AtomicFile::isTempOf("streamed.ckpt..tmp", "streamed.ckpt"));
  CHECK_FALSE(AtomicFile::isTempOf("streamed.ckpt.12", "streamed.ckpt"));
}

TEST_CASE("checkpoint write and read errors name the path") {
  TempDir dir;
  const auto missing = dir / "no" / "such" / "dir" / "x.ckpt";
  try {
    writeCheckpoint(missing, randomBody(4, 1));
    FAIL("write into a missing directory succeeded");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("x.ckpt") != std::string::npos);
  }
  CHECK_THROWS_AS(readCheckpoint(dir / "absent.ckpt"), IoError);
}

TEST_CASE("every truncation of a checkpoint is rejected") {
  TempDir dir;
  const Bytes file = wrapCheckpoint(randomBody(40, 2));
  const auto path = dir / "t.ckpt";
  for (std::size_t n = 0; n < file.size(); ++n) {
    CAPTURE(n);
    const auto part = std::span<const std::byte>(file).first(n);
    CHECK_THROWS_AS(unwrapCheckpoint(part, "mem"), DataError);
    writeRaw(path, part);
    CHECK_THROWS_AS(readCheckpoint(path), DataError);
  }
  // A longer file is as malformed as a shorter one.
  Bytes longer = file;
  longer.push_back(std::byte{0});
  CHECK_THROWS_AS(unwrapCheckpoint(longer, "mem"), DataError);
}

TEST_CASE("every single-bit flip of a checkpoint is rejected") {
  TempDir dir;
  const Bytes file = wrapCheckpoint(randomBody(24, 3));
  const auto path = dir / "f.ckpt";
  for (std::size_t bit = 0; bit < file.size() * 8; ++bit) {
    CAPTURE(bit);
    Bytes bad = file;
    bad[bit / 8] ^= std::byte(1u << (bit % 8));
    CHECK_THROWS_AS(unwrapCheckpoint(bad, "mem"), DataError);
    if (bit % 7 == 0) {  // the file path shares the checks; sample it to keep the test fast
      writeRaw(path, bad);
      CHECK_THROWS_AS(readCheckpoint(path), DataError);
    }
  }
}

TEST_CASE("checkpoint errors say what is wrong") {
  TempDir dir;
  const Bytes good = wrapCheckpoint(randomBody(16, 4));
  auto message = [&](const Bytes& b) {
    const auto path = dir / "m.ckpt";
    writeRaw(path, b);
    try {
      readCheckpoint(path);
    } catch (const DataError& e) {
      const std::string m = e.what();
      CHECK(m.rfind("checkpoint " + path.string() + ": ", 0) == 0);
      return m;
    }
    return std::string("accepted");
  };
  auto reseal = [](Bytes& b) {
    const std::uint32_t crc = crc32c(std::span<const std::byte>(b).first(28));
    std::memcpy(b.data() + 28, &crc, 4);
  };
  Bytes b = good;
  b[0] = std::byte{'X'};
  CHECK(message(b).find("bad magic") != std::string::npos);
  b = good;
  b[8] = std::byte{2};
  reseal(b);
  CHECK(message(b).find("unknown format version 2") != std::string::npos);
  b = good;
  b[12] ^= std::byte{1};
  CHECK(message(b).find("header checksum") != std::string::npos);
  // State of the other precision (core/real.h; every file before float32 state was float64, flags 0): one
  // line naming both precisions and how to go on.
  b = good;
  b[12] ^= std::byte{1};
  reseal(b);
  const std::string other = message(b);
  CHECK(other.find(std::string("its state is ") + (kRealIsDouble ? "float32" : "float64")) != std::string::npos);
  CHECK(other.find(std::string("this gossipd keeps ") + kRealName) != std::string::npos);
  CHECK(other.find("new node.data_dir") != std::string::npos);
  b = good;
  b[12] ^= std::byte{2};
  reseal(b);
  CHECK(message(b).find("unknown flags") != std::string::npos);
  b = good;
  b.back() ^= std::byte{1};
  CHECK(message(b).find("body checksum") != std::string::npos);
  CHECK(message(Bytes(good.begin(), good.begin() + 5)).find("truncated") != std::string::npos);
}

TEST_CASE("a huge body length field is rejected without allocating") {
  TempDir dir;
  Bytes b = wrapCheckpoint(randomBody(8, 5));
  // Claim an exabyte body and re-seal the header: only the size check can reject it.
  const std::uint64_t huge = std::uint64_t(1) << 60;
  std::memcpy(b.data() + 16, &huge, 8);
  const std::uint32_t crc = crc32c(std::span<const std::byte>(b).first(28));
  std::memcpy(b.data() + 28, &crc, 4);
  writeRaw(dir / "h.ckpt", b);
  CHECK_THROWS_WITH_AS(readCheckpoint(dir / "h.ckpt"), doctest::Contains("truncated"), DataError);
  CHECK_THROWS_AS(unwrapCheckpoint(b, "mem"), DataError);
}
