// model.npy: the header NumPy expects (magic, version, dict, 64-byte aligned data) and, where Debian's
// python3-numpy is installed, numpy.load reads back the same doubles bit for bit.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "daemon/node/model_out.h"

using namespace gossip;

TEST_CASE("npy bytes: header and data") {
  for (std::size_t n : {0u, 1u, 7850u}) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.1 * double(i) - 3.0;
    const Bytes b = daemon::npyBytes(x);
    REQUIRE(b.size() >= 10);
    CHECK(std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8) == 0);
    std::uint16_t len = 0;
    std::memcpy(&len, b.data() + 8, 2);
    CHECK((10 + len) % 64 == 0);
    const std::string header(reinterpret_cast<const char*>(b.data()) + 10, len);
    CHECK(header.back() == '\n');
    CHECK(header.find("'descr': '<f8'") != std::string::npos);
    CHECK(header.find("'shape': (" + std::to_string(n) + ",)") != std::string::npos);
    REQUIRE(b.size() == 10 + len + 8 * n);
    if (n > 0) CHECK(std::memcmp(b.data() + 10 + len, x.data(), 8 * n) == 0);  // memcmp with a null pointer is UB even for 0 bytes
  }
}

TEST_CASE("writeModel: numpy.load gives the same values") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gossipd-npy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<double> x{1.0, -0.0, 1e-300, std::numeric_limits<double>::max(), 0.1, -7.25};
  daemon::writeModel(dir, x, {{"model", "softmax"}, {"dim", x.size()}});
  CHECK(fs::exists(dir / "model.json"));
  CHECK(!fs::exists(dir / "model.npy.tmp"));
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    MESSAGE("python3-numpy not installed: numpy round trip skipped");
  } else {
    const std::string cmd = "/usr/bin/python3 -c \"import numpy as np, struct; x = np.load('" + (dir / "model.npy").string() +
                            "'); w = [1.0, -0.0, 1e-300, 1.7976931348623157e308, 0.1, -7.25]; "
                            "assert x.dtype == np.float64 and x.shape == (6,); "
                            "assert x.tobytes() == struct.pack('<6d', *w)\"";
    CHECK(std::system(cmd.c_str()) == 0);
  }
  CHECK_THROWS_AS(daemon::writeModel(dir / "missing" / "deeper", x, {}), IoError);
  fs::remove_all(dir);
}
