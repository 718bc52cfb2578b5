// loadDatasetRows: a node's shard loaded by streaming the IDX files must equal, bit for bit, the rows of
// the fully loaded (and scaled) data set, for every scaling kind, with data.max_train, gzip and a capped
// test set; and the streaming reader must reject what readIdx rejects.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>

#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/data_loader.h"
#include "training/idx_reader.h"

using namespace gossip;
using namespace gossip::training;
using testing::gzipStored;
using testing::TempDir;

namespace {

using Bytes = std::vector<unsigned char>;

Bytes idxFile(unsigned char type, std::vector<std::uint32_t> dims, const Bytes& payload) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (auto d : dims)
    for (int k = 3; k >= 0; --k) b.push_back(static_cast<unsigned char>(d >> (8 * k)));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// n random u8 images of 3x4 pixels (one constant pixel, so scaling meets a zero range) and labels 0..3.
struct Files {
  std::string images, labels, test_images, test_labels;
};

Files writeSet(TempDir& dir, std::size_t n, std::size_t n_test, bool gzip, unsigned seed) {
  std::mt19937 rng(seed);
  auto make = [&](std::size_t rows, const std::string& stem) {
    Bytes px(rows * 12), lab(rows);
    for (std::size_t i = 0; i < px.size(); ++i) px[i] = (i % 12 == 5) ? 7 : static_cast<unsigned char>(rng() % 256);
    for (std::size_t i = 0; i < rows; ++i) lab[i] = static_cast<unsigned char>(i < 4 ? i : rng() % 4);
    Bytes pi = idxFile(0x08, {static_cast<std::uint32_t>(rows), 3, 4}, px);
    Bytes li = idxFile(0x08, {static_cast<std::uint32_t>(rows)}, lab);
    if (gzip) {
      pi = gzipStored(pi);
      li = gzipStored(li);
    }
    return std::pair{dir.write(stem + "-images-idx3-ubyte", pi), dir.write(stem + "-labels-idx1-ubyte", li)};
  };
  Files f;
  std::tie(f.images, f.labels) = make(n, "train");
  std::tie(f.test_images, f.test_labels) = make(n_test, "t10k");
  return f;
}

bool sameBits(const FeatureMatrix& a, const FeatureMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0;
}

}  // namespace

TEST_CASE("a streamed shard equals the same rows of the fully loaded data set - bit for bit") {
  TempDir dir;
  for (bool gzip : {false, true}) {
    const Files f = writeSet(dir, 200, 50, gzip, gzip ? 2u : 1u);
    for (const char* scaling : {"none", "minmax", "standardize"}) {
      for (std::size_t limit : {std::size_t{0}, std::size_t{120}}) {
        CAPTURE(gzip);
        CAPTURE(scaling);
        CAPTURE(limit);
        DataSpec spec;
        spec.train = f.images;
        spec.test = f.test_images;
        spec.scaling = scaling;
        spec.limit = limit;
        const LoadedData whole = loadDataset(spec);
        std::size_t seen_rows = 0;
        int seen_classes = 0;
        // Every third row, chosen from the labels alone (as a partitioner would).
        const RowSelector every3 = [&](const Dataset& labels) {
          seen_rows = labels.samples();
          seen_classes = labels.classes;
          CHECK(labels.features() == 0);
          std::vector<std::uint32_t> rows;
          for (std::uint32_t i = 1; i < labels.samples(); i += 3) rows.push_back(i);
          return rows;
        };
        const LoadedData shard = loadDatasetRows(spec, every3, 17);
        CHECK(seen_rows == whole.train.samples());
        CHECK(seen_classes == whole.train.classes);
        CHECK(shard.train_rows_total == whole.train.samples());
        REQUIRE(shard.train.samples() == (whole.train.samples() + 1) / 3);
        FeatureMatrix expect(static_cast<Eigen::Index>(shard.train.samples()), whole.train.X.cols());
        for (std::size_t k = 0; k < shard.train.samples(); ++k) {
          expect.row(static_cast<Eigen::Index>(k)) = whole.train.X.row(static_cast<Eigen::Index>(1 + 3 * k));
          CHECK(shard.train.y[k] == whole.train.y[1 + 3 * k]);
        }
        CHECK(sameBits(shard.train.X, expect));
        CHECK(shard.train.classes == whole.train.classes);
        REQUIRE(shard.test);
        CHECK(sameBits(shard.test->X, whole.test->X.topRows(17)));
        CHECK(std::vector<std::int32_t>(whole.test->y.begin(), whole.test->y.begin() + 17) == shard.test->y);
        CHECK(shard.scaler.offset == whole.scaler.offset);
        CHECK(shard.scaler.scale == whole.scaler.scale);
      }
    }
  }
}

TEST_CASE("row selections out of order or range are refused") {
  TempDir dir;
  const Files f = writeSet(dir, 20, 5, false, 3);
  DataSpec spec;
  spec.train = f.images;
  for (std::vector<std::uint32_t> bad : {std::vector<std::uint32_t>{3, 2}, {1, 1}, {20}}) {
    CHECK_THROWS_AS(loadDatasetRows(spec, [&](const Dataset&) { return bad; }, 0), DataError);
  }
  CHECK(loadDatasetRows(spec, [](const Dataset&) { return std::vector<std::uint32_t>{}; }, 0).train.samples() == 0);
}

TEST_CASE("the streaming IDX reader rejects what readIdx rejects") {
  TempDir dir;
  const Bytes px(3 * 4, 9);
  const auto good = idxFile(0x08, {3, 2, 2}, px);
  auto rowsOf = [](const std::string& p) {
    IdxRowStream s(p);
    std::vector<float> row(s.features());
    for (std::size_t i = 0; i < s.rows(); ++i) s.next(row.data());
    s.finish();
  };
  Bytes shortFile(good.begin(), good.end() - 1);
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("short", shortFile)), doctest::Contains("file ends early"), DataError);
  Bytes longFile = good;
  longFile.push_back(1);
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("long", longFile)), doctest::Contains("1 unexpected bytes"), DataError);
  Bytes magic = good;
  magic[0] = 1;
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("magic", magic)), doctest::Contains("not an IDX file"), DataError);
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("tiny", Bytes{0, 0})), doctest::Contains("IDX magic"), DataError);
  const auto huge = idxFile(0x08, {0, 0xFFFFFFFFu, 0xFFFFFFFFu}, {});
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("huge", huge)), doctest::Contains("too large"), DataError);
  // A NaN in an f32 file, in a row that is read.
  Bytes f32 = idxFile(0x0D, {1, 1}, {0x7F, 0xC0, 0x00, 0x00});
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("nan", f32)), doctest::Contains("not finite"), DataError);
  Bytes gz = gzipStored(good);
  Bytes cut(gz.begin(), gz.end() - 12);
  CHECK_THROWS_WITH_AS(rowsOf(dir.write("cut.gz", cut)), doctest::Contains("cut.gz"), DataError);
}
