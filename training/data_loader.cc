#include "training/data_loader.h"

#include <algorithm>

#include "core/error.h"
#include "training/idx_reader.h"
#include "training/scaling.h"
#include "training/text_readers.h"

namespace gossip::training {

namespace {
std::string idxLabelsPath(const std::string& images, const std::string& given, const char* field) {
  if (!given.empty()) return given;
  const std::string from = "images-idx3", to = "labels-idx1";
  const std::size_t slash = images.find_last_of('/');
  const std::size_t pos = images.rfind(from);
  if (pos == std::string::npos || (slash != std::string::npos && pos < slash))
    throw ConfigError(std::string(field) + ": needed for idx data when the image file name (" + images +
                      ") does not contain 'images-idx3'");
  return images.substr(0, pos) + to + images.substr(pos + from.size());
}

Dataset readOne(const DataSpec& spec, const std::string& path, const std::string& labels, const char* field,
                std::size_t features) {
  TextReadOptions opt;
  opt.regression = spec.regression;
  opt.features = features;
  opt.label_column = spec.label_column;
  opt.header = spec.header;
  opt.delimiter = spec.delimiter;
  if (spec.format == "idx") return readIdx(path, idxLabelsPath(path, labels, field));
  if (spec.format == "libsvm") return readLibsvm(path, opt);
  return readCsv(path, opt);
}

void checkSpec(const DataSpec& spec) {
  if (spec.format != "idx" && spec.format != "libsvm" && spec.format != "csv")
    throw ConfigError("data.format: unknown '" + spec.format + "' (idx, libsvm, csv)");
  if (spec.train.empty()) throw ConfigError("data.train: no training file given");
  if (spec.classes < 0) throw ConfigError("data.classes: must be >= 0");
  if (spec.regression && spec.format == "idx") throw ConfigError("data.regression: not supported for idx data");
  if (spec.regression && spec.classes != 0) throw ConfigError("data.classes: must be 0 for regression data");
}

// Both sets end with one class count: the larger of the two, or data.classes when given.
void reconcileClasses(const DataSpec& spec, Dataset& train, Dataset* test) {
  int classes = train.classes;
  if (test != nullptr) classes = std::max(classes, test->classes);
  if (spec.classes != 0) {
    if (classes > spec.classes)
      throw DataError(spec.train + ": labels go up to " + std::to_string(classes - 1) + " but data.classes is " +
                      std::to_string(spec.classes));
    classes = spec.classes;
  }
  train.classes = classes;
  if (test != nullptr) test->classes = classes;
}

void truncate(Dataset& d, std::size_t n) {
  if (n == 0 || n >= d.samples()) return;
  d.X.conservativeResize(static_cast<Eigen::Index>(n), Eigen::NoChange);
  if (!d.y.empty()) d.y.resize(n);
  if (!d.targets.empty()) d.targets.resize(n);
}
}  // namespace

void checkLabels(const Dataset& train, const std::string& train_path, const Dataset* test,
                 const std::string& test_path) {
  if (train.y.empty()) return;
  std::vector<std::int32_t> labels(train.y);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  const auto classes = static_cast<std::int32_t>(labels.size());
  if (labels.back() != classes - 1) {
    std::int32_t missing = 0;
    while (std::binary_search(labels.begin(), labels.end(), missing)) ++missing;
    throw DataError(train_path + ": label " + std::to_string(labels.back()) + " occurs but label " +
                    std::to_string(missing) + " does not; class labels must be 0.." + std::to_string(classes - 1) +
                    " for the " + std::to_string(classes) + " distinct labels (gaps are not allowed)");
  }
  if (test == nullptr) return;
  for (std::int32_t v : test->y)
    if (v < 0 || v >= classes)
      throw DataError(test_path + ": label " + std::to_string(v) + " does not occur in the training data " +
                      train_path + " (labels 0.." + std::to_string(classes - 1) + ")");
}

LoadedData loadDataset(const DataSpec& spec) {
  checkSpec(spec);
  const ScalingKind scaling = parseScaling(spec.scaling);

  LoadedData out;
  out.train = readOne(spec, spec.train, spec.train_labels, "data.train_labels", spec.features);
  truncate(out.train, spec.limit);
  if (!spec.test.empty()) {
    // A LIBSVM test file may simply not use the last features: read it in the training width, which
    // turns any larger index into a DataError.
    const std::size_t width = spec.format == "libsvm" ? out.train.features() : 0;
    out.test = readOne(spec, spec.test, spec.test_labels, "data.test_labels", width);
    if (out.test->features() != out.train.features())
      throw DataError(spec.test + ": " + std::to_string(out.test->features()) + " features, but the training file " +
                      spec.train + " has " + std::to_string(out.train.features()));
  }
  if (!spec.regression && spec.check_labels) checkLabels(out.train, spec.train, out.test ? &*out.test : nullptr, spec.test);
  if (!spec.regression) reconcileClasses(spec, out.train, out.test ? &*out.test : nullptr);
  out.scaler = Scaler::fit(out.train, scaling);
  out.scaler.apply(out.train);
  if (out.test) out.scaler.apply(*out.test);
  return out;
}

namespace {
// A data set of labels only: every row, no feature columns (what a RowSelector sees).
Dataset labelsOnly(std::vector<std::int32_t> y) {
  Dataset d;
  d.X.resize(static_cast<Eigen::Index>(y.size()), 0);
  d.classes = y.empty() ? 0 : *std::max_element(y.begin(), y.end()) + 1;
  d.y = std::move(y);
  return d;
}

void checkSelection(const std::vector<std::uint32_t>& rows, std::size_t n, const std::string& what) {
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (rows[k] >= n || (k > 0 && rows[k] <= rows[k - 1]))
      throw DataError(what + ": row selection is not ascending within the " + std::to_string(n) + " rows");
}

Dataset takeRows(const Dataset& src, const std::vector<std::uint32_t>& rows) {
  Dataset d;
  d.classes = src.classes;
  d.X.resize(static_cast<Eigen::Index>(rows.size()), src.X.cols());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    d.X.row(static_cast<Eigen::Index>(k)) = src.X.row(rows[k]);
    if (!src.y.empty()) d.y.push_back(src.y[rows[k]]);
    if (!src.targets.empty()) d.targets.push_back(src.targets[rows[k]]);
  }
  return d;
}

std::vector<std::uint32_t> headRows(std::size_t n, std::size_t max) {
  std::vector<std::uint32_t> rows(max == 0 ? n : std::min(n, max));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::uint32_t>(i);
  return rows;
}

// Streams `images`, converting rows [0, n) and keeping the rows listed in `keep` into out (resized here);
// every converted row also goes to the fitter when one is given. The rest of the file is read and
// checked (as readIdx would) without being converted.
void streamRows(const std::string& images, std::size_t n, const std::vector<std::uint32_t>& keep, Dataset* out,
                ScalerFitter* fitter) {
  IdxRowStream in(images);
  if (out != nullptr) out->X.resize(static_cast<Eigen::Index>(keep.size()), static_cast<Eigen::Index>(in.features()));
  Eigen::RowVectorXf row(static_cast<Eigen::Index>(in.features()));
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool kept = k < keep.size() && keep[k] == i;
    if (!kept && fitter == nullptr) {
      in.skip();
      continue;
    }
    in.next(row.data());
    if (fitter != nullptr) fitter->add(row);
    if (kept && out != nullptr) out->X.row(static_cast<Eigen::Index>(k)) = row;
    if (kept) ++k;
  }
  in.finish();
}

LoadedData loadIdxRows(const DataSpec& spec, const RowSelector& select, std::size_t test_max) {
  const ScalingKind scaling = parseScaling(spec.scaling);
  LoadedData out;
  const std::string trainLabels = idxLabelsPath(spec.train, spec.train_labels, "data.train_labels");
  std::vector<std::int32_t> y = readIdxLabels(trainLabels);
  std::size_t features = 0;
  {
    IdxRowStream probe(spec.train);
    if (y.size() != probe.rows())
      throw DataError(trainLabels + ": byte 4: " + std::to_string(y.size()) + " labels for " +
                      std::to_string(probe.rows()) + " images in " + spec.train);
    features = probe.features();
  }
  if (spec.limit != 0 && spec.limit < y.size()) y.resize(spec.limit);
  const std::size_t n = y.size();
  Dataset labels = labelsOnly(std::move(y));
  std::optional<Dataset> testLabels;
  std::string testLabelsPath;
  if (!spec.test.empty()) {
    testLabelsPath = idxLabelsPath(spec.test, spec.test_labels, "data.test_labels");
    testLabels = labelsOnly(readIdxLabels(testLabelsPath));
    IdxRowStream probe(spec.test);
    if (testLabels->y.size() != probe.rows())
      throw DataError(testLabelsPath + ": byte 4: " + std::to_string(testLabels->y.size()) + " labels for " +
                      std::to_string(probe.rows()) + " images in " + spec.test);
    if (probe.features() != features)
      throw DataError(spec.test + ": " + std::to_string(probe.features()) + " features, but the training file " +
                      spec.train + " has " + std::to_string(features));
  }
  if (spec.check_labels) checkLabels(labels, spec.train, testLabels ? &*testLabels : nullptr, spec.test);
  reconcileClasses(spec, labels, testLabels ? &*testLabels : nullptr);

  const std::vector<std::uint32_t> keep = select(labels);
  checkSelection(keep, n, spec.train);
  out.train_rows_total = n;
  out.train.classes = labels.classes;
  for (auto r : keep) out.train.y.push_back(labels.y[r]);
  ScalerFitter fitter(scaling, static_cast<Eigen::Index>(features));
  streamRows(spec.train, n, keep, &out.train, scaling == ScalingKind::None ? nullptr : &fitter);
  fitter.endPass();
  for (int pass = 1; pass < fitter.passes(); ++pass) {
    streamRows(spec.train, n, {}, nullptr, &fitter);
    fitter.endPass();
  }
  out.scaler = fitter.result();
  out.scaler.apply(out.train);
  if (testLabels) {
    const auto head = headRows(testLabels->y.size(), test_max);
    Dataset test;
    test.classes = testLabels->classes;
    for (auto r : head) test.y.push_back(testLabels->y[r]);
    streamRows(spec.test, testLabels->y.size(), head, &test, nullptr);
    out.scaler.apply(test);
    out.test = std::move(test);
  }
  return out;
}
}  // namespace

LoadedData loadDatasetRows(const DataSpec& spec, const RowSelector& select, std::size_t test_max) {
  checkSpec(spec);
  if (spec.format == "idx") return loadIdxRows(spec, select, test_max);
  LoadedData all = loadDataset(spec);
  Dataset labels = labelsOnly(all.train.y);
  labels.X.resize(static_cast<Eigen::Index>(all.train.samples()), 0);
  labels.classes = all.train.classes;
  const auto keep = select(labels);
  checkSelection(keep, all.train.samples(), spec.train);
  LoadedData out;
  out.train_rows_total = all.train.samples();
  out.train = takeRows(all.train, keep);
  if (all.test) out.test = takeRows(*all.test, headRows(all.test->samples(), test_max));
  out.scaler = all.scaler;
  return out;
}

double DataShape::bytes() const {
  return static_cast<double>(train_rows + test_rows) * (static_cast<double>(features) * sizeof(float) + sizeof(std::int32_t));
}

std::optional<DataShape> peekDataShape(const DataSpec& spec) {
  if (spec.format != "idx" || spec.train.empty()) return std::nullopt;
  checkSpec(spec);  // the errors loadDataset would give first, in the same order
  (void)parseScaling(spec.scaling);
  const std::string labelsPath = idxLabelsPath(spec.train, spec.train_labels, "data.train_labels");
  DataShape s;
  const IdxRowStream train(spec.train);
  s.features = train.features();
  s.train_rows = spec.limit > 0 ? std::min(spec.limit, train.rows()) : train.rows();
  const auto labels = readIdxLabels(labelsPath);
  for (std::size_t i = 0; i < std::min(labels.size(), train.rows()); ++i) s.classes = std::max(s.classes, labels[i] + 1);
  if (!spec.test.empty()) s.test_rows = IdxRowStream(spec.test).rows();
  if (spec.classes > 0) s.classes = spec.classes;
  return s;
}

DataSpec fashionMnistSpec(const std::string& dir) {
  DataSpec s;
  s.format = "idx";
  s.train = dir + "/train-images-idx3-ubyte.gz";
  s.test = dir + "/t10k-images-idx3-ubyte.gz";
  return s;
}

}  // namespace gossip::training
