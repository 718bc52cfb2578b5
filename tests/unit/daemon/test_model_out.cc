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
    std::vector<Real> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<Real>(0.1 * double(i) - 3.0);
    const Bytes b = daemon::npyBytes(x);
    REQUIRE(b.size() >= 10);
    CHECK(std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8) == 0);
    std::uint16_t len = 0;
    std::memcpy(&len, b.data() + 8, 2);
    CHECK((10 + len) % 64 == 0);
    const std::string header(reinterpret_cast<const char*>(b.data()) + 10, len);
    CHECK(header.back() == '\n');
    CHECK(header.find(kRealIsDouble ? "'descr': '<f8'" : "'descr': '<f4'") != std::string::npos);
    CHECK(header.find("'shape': (" + std::to_string(n) + ",)") != std::string::npos);
    REQUIRE(b.size() == 10 + len + sizeof(Real) * n);
    if (n > 0) CHECK(std::memcmp(b.data() + 10 + len, x.data(), sizeof(Real) * n) == 0);  // memcmp with a null pointer is UB even for 0 bytes
  }
}

TEST_CASE("writeModel: numpy.load gives the same values") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gossipd-npy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Extremes of the state's type (core/real.h): float32's in the default build, float64's in the other.
  std::vector<Real> x{1.0, -0.0, std::numeric_limits<Real>::denorm_min(), std::numeric_limits<Real>::max(), Real(0.1), -7.25};
  daemon::writeModel(dir, x, {{"model", "softmax"}, {"dim", x.size()}});
  CHECK(fs::exists(dir / "model.json"));
  CHECK(!fs::exists(dir / "model.npy.tmp"));
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    MESSAGE("python3-numpy not installed: numpy round trip skipped");
  } else {
    const std::string cmd = "/usr/bin/python3 -c \"import numpy as np, struct; x = np.load('" + (dir / "model.npy").string() +
                            "'); t = np." + std::string(kRealIsDouble ? "float64" : "float32") +
                            "; w = np.array([1.0, -0.0, np.finfo(t).smallest_subnormal, np.finfo(t).max, 0.1, -7.25], dtype=t); "
                            "assert x.dtype == t and x.shape == (6,); "
                            "assert x.tobytes() == w.tobytes()\"";
    CHECK(std::system(cmd.c_str()) == 0);
  }
  CHECK_THROWS_AS(daemon::writeModel(dir / "missing" / "deeper", x, {}), IoError);
  fs::remove_all(dir);
}
