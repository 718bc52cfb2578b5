// Data readers on small files written by the tests: IDX (plain and gzip), LIBSVM, CSV, feature scaling,
// loadDataset, and every kind of malformed input -> DataError naming the file and the line or byte.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "tests/unit/training/training_test_util.h"
#include "training/data_loader.h"
#include "training/idx_reader.h"
#include "training/text_readers.h"

using namespace gossip;
using namespace gossip::training;
using testing::gzipStored;
using testing::TempDir;

namespace {

using Bytes = std::vector<unsigned char>;

Bytes idx(unsigned char type, std::vector<std::uint32_t> dims, const Bytes& payload) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (auto d : dims)
    for (int k = 3; k >= 0; --k) b.push_back(static_cast<unsigned char>(d >> (8 * k)));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Three 2x2 u8 images and their labels.
const Bytes kPixels = {0, 255, 51, 102, 10, 20, 30, 40, 255, 255, 0, 0};
const Bytes kLabels = {2, 0, 1};

// Runs f, expecting a DataError whose message contains every fragment.
template <class F>
void expectDataError(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    FAIL("no DataError");
  } catch (const DataError& e) {
    const std::string msg = e.what();
    for (const auto& frag : fragments) CHECK_MESSAGE(msg.find(frag) != std::string::npos, msg, " lacks ", frag);
  }
}

}  // namespace

TEST_CASE("IDX images and labels - plain and gzip - give the same data") {
  TempDir dir;
  const auto ip = dir.write("train-images-idx3-ubyte", idx(0x08, {3, 2, 2}, kPixels));
  const auto lp = dir.write("train-labels-idx1-ubyte", idx(0x08, {3}, kLabels));
  const auto igz = dir.write("i.gz", gzipStored(idx(0x08, {3, 2, 2}, kPixels)));
  const auto lgz = dir.write("l.gz", gzipStored(idx(0x08, {3}, kLabels)));
  for (const auto& [i, l] : {std::pair{ip, lp}, std::pair{igz, lgz}}) {
    const Dataset d = readIdx(i, l);
    REQUIRE(d.samples() == 3);
    REQUIRE(d.features() == 4);
    CHECK(d.classes == 3);
    CHECK(d.y == std::vector<std::int32_t>{2, 0, 1});
    for (int k = 0; k < 12; ++k) CHECK(d.X.data()[k] == doctest::Approx(kPixels[static_cast<std::size_t>(k)] / 255.0));
    CHECK(d.X(0, 1) == 1.0f);
  }
  // loadDataset derives the labels file name from the images file name.
  DataSpec s;
  s.format = "idx";
  s.train = ip;
  const LoadedData ld = loadDataset(s);
  CHECK(ld.train.y == std::vector<std::int32_t>{2, 0, 1});
  CHECK_FALSE(ld.test.has_value());
}

TEST_CASE("IDX wider types decode big-endian") {
  TempDir dir;
  // i16 images (two samples, one feature each): 0x0102 = 258, 0xFFFE = -2; f32 1.5 = 0x3FC00000.
  const auto ip = dir.write("i", idx(0x0B, {2, 1}, {0x01, 0x02, 0xFF, 0xFE}));
  const auto lp = dir.write("l", idx(0x0C, {2}, {0, 0, 0, 4, 0, 0, 0, 0}));
  const Dataset d = readIdx(ip, lp);
  CHECK(d.X(0, 0) == 258.0f);
  CHECK(d.X(1, 0) == -2.0f);
  CHECK(d.y == std::vector<std::int32_t>{4, 0});
  CHECK(d.classes == 5);
  const auto fp = dir.write("f", idx(0x0D, {1, 1}, {0x3F, 0xC0, 0, 0}));
  const auto l1 = dir.write("l1", idx(0x08, {1}, {0}));
  CHECK(readIdx(fp, l1).X(0, 0) == 1.5f);
}

TEST_CASE("malformed IDX files are DataErrors with the byte offset") {
  TempDir dir;
  const auto good_l = dir.write("l", idx(0x08, {3}, kLabels));
  const auto good_i = dir.write("i", idx(0x08, {3, 2, 2}, kPixels));
  auto imgs = [&](const std::string& name, const Bytes& b) {
    const auto p = dir.write(name, b);
    return [p, good_l] { readIdx(p, good_l); };
  };
  expectDataError(imgs("empty", {}), {"empty", "byte 0"});
  expectDataError(imgs("magic", {1, 0, 8, 1, 0, 0, 0, 0}), {"magic", "byte 0"});
  expectDataError(imgs("type", idx(0x07, {3, 2, 2}, kPixels)), {"type", "byte 2:", "unknown IDX type"});
  expectDataError(imgs("dims", {0, 0, 8, 3, 0, 0}), {"dims", "byte 6", "dimension list"});
  Bytes short_px(kPixels.begin(), kPixels.end() - 1);
  expectDataError(imgs("short", idx(0x08, {3, 2, 2}, short_px)), {"short", "byte 27", "ends early"});
  Bytes long_px = kPixels;
  long_px.push_back(9);
  expectDataError(imgs("long", idx(0x08, {3, 2, 2}, long_px)), {"long", "byte 28", "unexpected bytes"});
  const Bytes nan_px = {0x7F, 0xC0, 0, 0};
  const auto one_l = dir.write("one", idx(0x08, {1}, {0}));
  const auto nan_i = dir.write("nan", idx(0x0D, {1, 1}, nan_px));
  expectDataError([&] { readIdx(nan_i, one_l); }, {"nan", "byte 12"});
  // Label problems.
  const auto l2 = dir.write("l2", idx(0x08, {2}, {0, 1}));
  expectDataError([&] { readIdx(good_i, l2); }, {"l2", "2 labels for 3 images"});
  const auto lm = dir.write("lm", idx(0x08, {3, 1}, kLabels));
  expectDataError([&] { readIdx(good_i, lm); }, {"lm", "1-dimensional"});
  const auto lneg = dir.write("lneg", idx(0x09, {3}, {0, 0xFF, 1}));
  expectDataError([&] { readIdx(good_i, lneg); }, {"lneg", "byte 9", "non-negative"});
  expectDataError([&] { readIdx(dir.file("missing"), good_l); }, {"missing", "cannot open"});
  std::filesystem::create_directory(dir.file("adir"));
  expectDataError([&] { readIdx(dir.file("adir"), good_l); }, {"adir"});
}

TEST_CASE("truncated or corrupt gzip is a DataError") {
  TempDir dir;
  const auto good_l = dir.write("l", idx(0x08, {3}, kLabels));
  Bytes gz = gzipStored(idx(0x08, {3, 2, 2}, kPixels));
  Bytes cut(gz.begin(), gz.end() - 12);  // inside the data block
  expectDataError([&] { readIdx(dir.write("cut.gz", cut), good_l); }, {"cut.gz", "gzip"});
  Bytes cut_trailer(gz.begin(), gz.end() - 3);  // inside the size field of the trailer
  expectDataError([&] { readIdx(dir.write("trail.gz", cut_trailer), good_l); }, {"trail.gz", "gzip"});
  Bytes crc = gz;
  crc[crc.size() - 6] ^= 0xFF;  // CRC32 trailer
  expectDataError([&] { readIdx(dir.write("crc.gz", crc), good_l); }, {"crc.gz"});
  Bytes mangled = gz;
  mangled[10] = 0x07;  // block type 11 (reserved)
  expectDataError([&] { readIdx(dir.write("bad.gz", mangled), good_l); }, {"bad.gz"});
}

TEST_CASE("LIBSVM: sparse rows - comments - binary and multiclass labels") {
  TempDir dir;
  const auto p = dir.writeText("a.svm",
                               "# header comment\n"
                               "+1 1:0.5 3:-2  # trailing comment\n"
                               "\n"
                               "-1 2:1e-1\r\n"
                               "-1\n"
                               "+1 qid:3 4:7\n");
  const Dataset d = readLibsvm(p, {});
  REQUIRE(d.samples() == 4);
  REQUIRE(d.features() == 4);
  CHECK(d.classes == 2);
  CHECK(d.y == std::vector<std::int32_t>{1, 0, 0, 1});
  CHECK(d.X(0, 0) == 0.5f);
  CHECK(d.X(0, 1) == 0.0f);
  CHECK(d.X(0, 2) == -2.0f);
  CHECK(d.X(1, 1) == doctest::Approx(0.1));
  CHECK(d.X.row(2).isZero());
  CHECK(d.X(3, 3) == 7.0f);

  const auto mc = dir.writeText("m.svm", "0 1:1\n3 2:1\n2 1:2\n");
  const Dataset m = readLibsvm(mc, {});
  CHECK(m.y == std::vector<std::int32_t>{0, 3, 2});
  CHECK(m.classes == 4);
  TextReadOptions reg;
  reg.regression = true;
  const auto rp = dir.writeText("r.svm", "2.5 1:1\n-0.25 2:1\n");
  const Dataset r = readLibsvm(rp, reg);
  CHECK(r.classes == 0);
  CHECK(r.y.empty());
  CHECK(r.targets == std::vector<double>{2.5, -0.25});
}

TEST_CASE("malformed LIBSVM lines name file and line") {
  TempDir dir;
  auto bad = [&](const std::string& text) {
    const auto p = dir.writeText("bad.svm", text);
    return [p] { readLibsvm(p, {}); };
  };
  expectDataError(bad("1 1:1\n1 0:1\n"), {"bad.svm:2:", "1-based"});
  expectDataError(bad("1 1:1\n\n1 3:1 2:1\n"), {"bad.svm:3:", "ascending"});
  expectDataError(bad("1 1:1 1:2\n"), {"bad.svm:1:", "ascending"});
  expectDataError(bad("1 1:x\n"), {"bad.svm:1:", "value"});
  expectDataError(bad("1 1:1e999\n"), {"bad.svm:1:", "value"});
  expectDataError(bad("1 11\n"), {"bad.svm:1:", "index:value"});
  expectDataError(bad("abc 1:1\n"), {"bad.svm:1:", "label"});
  expectDataError(bad("1 1:1\n2.5 1:1\n"), {"bad.svm:2:", "class index"});
  expectDataError(bad("1 1:1\n-2 1:1\n"), {"bad.svm:2:", "class index"});
  expectDataError(bad("# nothing\n\n"), {"bad.svm", "no samples"});
  expectDataError(bad("1 4000000000:1\n"), {"bad.svm", "dense matrix"});
  expectDataError(bad(std::string("\x01\x02\0\xff 1:1\n", 9)), {"bad.svm:1:", R"(bad label '\x01\x02\x00\xff')"});
  TextReadOptions narrow;
  narrow.features = 2;
  const auto p = dir.writeText("w.svm", "1 1:1\n1 3:1\n");
  expectDataError([&] { readLibsvm(p, narrow); }, {"w.svm:2:", "exceeds"});
}

TEST_CASE("CSV with and without header - any label column") {
  TempDir dir;
  const auto h = dir.writeText("h.csv", "f1,label,f2\n1.5, 1 ,2\n\n-1,0,4e0\r\n");
  TextReadOptions o;
  o.header = true;
  o.label_column = 1;
  const Dataset d = readCsv(h, o);
  REQUIRE(d.samples() == 2);
  REQUIRE(d.features() == 2);
  CHECK(d.y == std::vector<std::int32_t>{1, 0});
  CHECK(d.X(0, 0) == 1.5f);
  CHECK(d.X(0, 1) == 2.0f);
  CHECK(d.X(1, 1) == 4.0f);

  const auto n = dir.writeText("n.csv", "1;2;5\n3;4;6\n");
  TextReadOptions last;
  last.label_column = -1;
  last.delimiter = ';';
  const Dataset e = readCsv(n, last);
  CHECK(e.y == std::vector<std::int32_t>{5, 6});
  CHECK(e.classes == 7);
  CHECK(e.X(1, 0) == 3.0f);
  CHECK(e.X(1, 1) == 4.0f);
}

TEST_CASE("malformed CSV is a DataError with the line - a bad label column is a ConfigError") {
  TempDir dir;
  auto bad = [&](const std::string& text, TextReadOptions o = {}) {
    const auto p = dir.writeText("bad.csv", text);
    return [p, o] { readCsv(p, o); };
  };
  expectDataError(bad("0,1,2\n1,2\n"), {"bad.csv:2:", "expected 3 fields, found 2"});
  expectDataError(bad("0,1,2\n1,2,x\n"), {"bad.csv:2:", "field 3"});
  expectDataError(bad("0,1,2\n1,,3\n"), {"bad.csv:2:", "field 2"});
  expectDataError(bad("a,b\n0,1\n"), {"bad.csv:1:"});  // header present but not declared
  expectDataError(bad("5\n"), {"bad.csv:1:", "at least one feature"});
  expectDataError(bad(""), {"no samples"});
  TextReadOptions o;
  o.label_column = 5;
  CHECK_THROWS_AS(bad("0,1,2\n", o)(), ConfigError);
}

TEST_CASE("scaling is fitted on train and applied unchanged to test") {
  TempDir dir;
  DataSpec s;
  s.format = "csv";
  s.train = dir.writeText("tr.csv", "0,1,10\n1,3,10\n0,5,10\n");
  s.test = dir.writeText("te.csv", "1,7,11\n");
  SUBCASE("minmax") {
    s.scaling = "minmax";
    const LoadedData d = loadDataset(s);
    CHECK(d.train.X(0, 0) == 0.0f);
    CHECK(d.train.X(1, 0) == 0.5f);
    CHECK(d.train.X(2, 0) == 1.0f);
    CHECK(d.train.X.col(1).isZero());  // constant feature: 0, not NaN
    CHECK(d.test->X(0, 0) == 1.5f);    // (7 - 1) / 4 with the train range
    CHECK(d.test->X(0, 1) == 1.0f);
  }
  SUBCASE("standardize") {
    s.scaling = "standardize";
    const LoadedData d = loadDataset(s);
    const Eigen::VectorXd c0 = d.train.X.col(0).cast<double>();
    CHECK(c0.mean() == doctest::Approx(0.0).epsilon(1e-7));
    CHECK((c0.array() - c0.mean()).square().mean() == doctest::Approx(1.0).epsilon(1e-6));
    const double sd = std::sqrt(8.0 / 3.0);
    CHECK(d.test->X(0, 0) == doctest::Approx((7 - 3) / sd).epsilon(1e-6));
    CHECK(d.test->X(0, 1) == 1.0f);  // constant feature only centred
  }
  SUBCASE("unknown") {
    s.scaling = "log";
    CHECK_THROWS_WITH_AS(loadDataset(s), doctest::Contains("data.scaling"), ConfigError);
  }
}

TEST_CASE("loadDataset reconciles train and test") {
  TempDir dir;
  DataSpec s;
  s.format = "libsvm";
  s.train = dir.writeText("tr.svm", "0 1:1 4:1\n1 2:1\n");
  s.test = dir.writeText("te.svm", "1 1:1\n");
  const LoadedData d = loadDataset(s);
  CHECK(d.test->features() == 4);  // padded to the training width
  CHECK(d.train.classes == 2);
  CHECK(d.test->classes == 2);
  // A class only the test set has cannot be learned: refused rather than silently widening the model.
  s.test = dir.writeText("te3.svm", "2 1:1\n");
  expectDataError([&] { loadDataset(s); }, {"te3.svm", "label 2 does not occur"});
  s.test = dir.writeText("wide.svm", "1 5:1\n");
  expectDataError([&] { loadDataset(s); }, {"wide.svm:1:", "exceeds"});

  DataSpec c;
  c.format = "csv";
  c.train = dir.writeText("a.csv", "0,1,2\n1,2,3\n");
  c.test = dir.writeText("b.csv", "0,1\n");
  expectDataError([&] { loadDataset(c); }, {"b.csv", "1 features", "2"});
  c.test.clear();
  c.classes = 5;
  CHECK(loadDataset(c).train.classes == 5);
  c.classes = 1;
  CHECK_THROWS_AS(loadDataset(c), DataError);
  c.classes = 0;
  c.limit = 1;
  CHECK(loadDataset(c).train.samples() == 1);

  DataSpec bad;
  bad.format = "parquet";
  bad.train = "x";
  CHECK_THROWS_WITH_AS(loadDataset(bad), doctest::Contains("data.format"), ConfigError);
  bad.format = "idx";
  bad.train = dir.file("images.bin");
  CHECK_THROWS_WITH_AS(loadDataset(bad), doctest::Contains("data.train_labels"), ConfigError);
  bad.train.clear();
  CHECK_THROWS_WITH_AS(loadDataset(bad), doctest::Contains("data.train"), ConfigError);
}

// Labels: the class count is the number of distinct labels, which must be 0..C-1.
TEST_CASE("labels with a gap or a test-only label are refused - naming the file and label") {
  using gossip::training::checkLabels;
  using gossip::training::Dataset;
  Dataset train, test;
  train.y = {0, 1, 2, 1, 0};
  test.y = {0, 2};
  CHECK_NOTHROW(checkLabels(train, "train.csv", &test, "test.csv"));
  test.y = {0, 3};
  CHECK_THROWS_WITH_AS(checkLabels(train, "train.csv", &test, "test.csv"),
                       doctest::Contains("test.csv: label 3 does not occur in the training data train.csv"),
                       gossip::DataError);
  train.y = {0, 1, 255, 1};
  CHECK_THROWS_WITH_AS(checkLabels(train, "labels-idx1", nullptr, ""),
                       doctest::Contains("labels-idx1: label 255 occurs but label 2 does not"), gossip::DataError);
  Dataset regression;
  CHECK_NOTHROW(checkLabels(regression, "r.csv", nullptr, ""));
}

TEST_CASE("a UTF-8 byte-order mark is skipped - and binary bytes in messages are escaped") {
  using namespace gossip::training;
  TempDir dir;
  TextReadOptions opt;
  opt.label_column = -1;
  const Dataset d = readCsv(dir.writeText("bom.csv", "\xEF\xBB\xBF" "1,2,0\n3,4,1\n"), opt);
  CHECK(d.samples() == 2);
  CHECK(d.X(0, 0) == 1.0f);
  CHECK(readLibsvm(dir.writeText("bom.svm", "\xEF\xBB\xBF" "1 1:2\n0 2:1\n"), {}).samples() == 2);
  expectDataError([&] { readCsv(dir.writeText("junk.csv", "1,2,0\n\x01x,4,1\n"), opt); }, {"junk.csv:2:", "'\\x01x'"});
}
